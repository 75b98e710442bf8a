#!/usr/bin/env python3
"""history_from_log.py: cuts a migration history out of a server log.

    history_from_log.py LOG OUTDIR [--bookkeeping TABLE]

LOG is the log of a PostgreSQL server that ran an application's migrations
with log_statement = all and log_line_prefix = '%m [%p] ', one migration per
transaction, each ending with an INSERT into the migration tool's
bookkeeping table (default "migrations") that names it. For each such
transaction OUTDIR/NAME.sql gets the statements the migration sent, in
order, each ending with ';', with the parameters of extended-protocol
statements written in as quoted literals. The bookkeeping statements
themselves are left out. Prints one line per migration: its name and the
number of statements.

This is how fixtures/history/ was made from migrations that are programs
rather than SQL files (see the README there).
"""
import os
import re
import sys

PREFIX = re.compile(r'^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \S+ \[(\d+)\] (\w+):  (.*)$')


def entries(path):
    """(pid, level, text) per log entry, continuation lines joined."""
    cur = None
    with open(path, encoding='utf-8', errors='replace') as f:
        for line in f:
            line = line.rstrip('\n')
            m = PREFIX.match(line)
            if m:
                if cur:
                    yield cur
                cur = [m.group(1), m.group(2), m.group(3)]
            elif cur is not None:
                cur[2] += '\n' + (line[1:] if line.startswith('\t') else line)
    if cur:
        yield cur


def parse_params(detail):
    """'$1 = 'a''b', $2 = NULL' -> {1: "'a''b'", 2: 'NULL'} (SQL literals)."""
    out = {}
    i = 0
    while True:
        m = re.compile(r'\s*\$(\d+) = ').match(detail, i)
        if not m:
            return out
        n, i = int(m.group(1)), m.end()
        if detail.startswith('NULL', i):
            out[n], i = 'NULL', i + 4
        else:
            j = i + 1
            while True:
                j = detail.index("'", j)
                if detail.startswith("''", j):
                    j += 2
                    continue
                break
            out[n], i = detail[i:j + 1], j + 1
        if detail.startswith(',', i):
            i += 1


def inline(sql, params):
    """Replaces $N outside literals, identifiers, comments and dollar quotes."""
    out, i = [], 0
    while i < len(sql):
        c = sql[i]
        if c in "'\"":
            j = i + 1
            while j < len(sql):
                if sql[j] == c:
                    if sql.startswith(c * 2, j):
                        j += 2
                        continue
                    break
                j += 1
            out.append(sql[i:j + 1])
            i = j + 1
        elif sql.startswith('--', i):
            j = sql.find('\n', i)
            j = len(sql) if j < 0 else j
            out.append(sql[i:j])
            i = j
        elif c == '$':
            m = re.compile(r'\$(\d+)').match(sql, i)
            t = re.compile(r'\$([A-Za-z_][A-Za-z0-9_]*)?\$').match(sql, i)
            if m and int(m.group(1)) in params:
                out.append(params[int(m.group(1))])
                i = m.end()
            elif t:
                end = sql.find(t.group(0), t.end())
                end = len(sql) if end < 0 else end + len(t.group(0))
                out.append(sql[i:end])
                i = end
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    log, outdir = argv[1], argv[2]
    table = argv[argv.index('--bookkeeping') + 1] if '--bookkeeping' in argv else 'migrations'
    mark = re.compile(r'INSERT INTO "?%s"? ' % re.escape(table), re.I)
    os.makedirs(outdir, exist_ok=True)
    stmts, pending = None, None   # statements of the open transaction
    for pid, level, text in entries(log):
        if level == 'DETAIL' and pending is not None and text.startswith('parameters: '):
            sql, name_next = pending
            params = parse_params(text[len('parameters: '):])
            if name_next:
                name = params[1].strip("'").lstrip('/')
                body = ''.join(s + '\n' for s in stmts)
                with open(os.path.join(outdir, name + '.sql'), 'w', encoding='utf-8') as f:
                    f.write(body)
                print(name, len(stmts))
                stmts = None
            else:
                stmts.append(end(inline(sql, params)))
            pending = None
            continue
        if pending is not None and stmts is not None:
            stmts.append(end(pending[0]))       # an execute without parameters
        pending = None
        if level != 'LOG':
            continue
        if text.startswith('statement: '):
            sql = text[len('statement: '):]
            if sql.strip().upper() == 'BEGIN;' or sql.strip().upper() == 'BEGIN':
                stmts = []
            elif sql.strip().upper() in ('COMMIT;', 'COMMIT'):
                stmts = None
            elif stmts is not None:
                stmts.append(end(sql))
        elif text.startswith('execute ') and stmts is not None:
            sql = text.split(': ', 1)[1]
            pending = (sql, bool(mark.match(sql.strip())))


def end(sql):
    sql = sql.strip()
    return sql if sql.endswith(';') else sql + ';'


if __name__ == '__main__':
    main(sys.argv)
