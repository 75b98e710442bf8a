/*
 * report.h: query results as JSON, for the commands that report
 * (status, schema, ddl-log): printed as JSON with --json, as text otherwise.
 */
#ifndef TIDEMARK_REPORT_H
#define TIDEMARK_REPORT_H

#include <jansson.h>
#include <libpq-fe.h>

/* One row as an object: numbers, booleans and JSON columns keep their type. */
json_t *report_row(PGresult *r, int row);
/* Every row, as an array. */
json_t *report_rows(PGresult *r);
/* Prints a document as indented JSON on stdout. */
void report_print_json(json_t *doc);
/* A string member, or "-". */
const char *report_str(json_t *o, const char *key);

#endif
