/*
 * cli_secret.c: passwords kept off the command line. A password file
 * (--source-password-file, --target-password-file: a systemd credential,
 * say) holds the password on its first line; it reaches libpq as the
 * password parameter (pgconn_set_password) and is never logged. A file
 * that holds a password and that other users may read is warned about,
 * as libpq warns about ~/.pgpass.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "exitcode.h"
#include "log.h"

#define PASSWORD_MAX 4096

static void
warn_if_shared(const char *what, const char *path, mode_t mode)
{
	if ((mode & (S_IRWXG | S_IRWXO)) != 0)
		log_warn("%s %s holds a password and other users than its owner may read it "
		         "(mode %04o): chmod 600 %s", what, path, (unsigned) (mode & 07777), path);
}

/* The first line of the file, without its line break. */
static int
read_first_line(int fd, char *buf, size_t size, size_t *len)
{
	size_t n = 0;

	while (n < size) {
		ssize_t got = read(fd, buf + n, size - n);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -1;
		if (got == 0)
			break;
		n += (size_t) got;
	}
	{
		const char *nl = memchr(buf, '\n', n);

		*len = nl != NULL ? (size_t) (nl - buf) : n;
	}
	if (*len > 0 && buf[*len - 1] == '\r')
		(*len)--;
	return 0;
}

static int
read_password(const char *path, const char *side, char **out)
{
	char buf[PASSWORD_MAX + 1];
	size_t len = 0;
	struct stat st;
	int fd, rc = TM_OK;

	if (path == NULL || *out != NULL)
		return TM_OK;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	memset(buf, 0, sizeof buf);
	if (fd < 0 || fstat(fd, &st) != 0 || read_first_line(fd, buf, PASSWORD_MAX + 1, &len) != 0) {
		log_error("cannot read the %s password file %s: %s", side, path, strerror(errno));
		rc = TM_EXIT_CONFIG;
	} else if (len > PASSWORD_MAX) {
		log_error("the first line of the %s password file %s is longer than %d bytes: write "
		          "the password alone on it", side, path, PASSWORD_MAX);
		rc = TM_EXIT_CONFIG;
	} else if (len == 0 || memchr(buf, '\0', len) != NULL) {
		log_error("the %s password file %s holds no password on its first line: write the "
		          "password alone on it", side, path);
		rc = TM_EXIT_CONFIG;
	} else {
		char what[64];

		snprintf(what, sizeof what, "the %s password file", side);
		warn_if_shared(what, path, st.st_mode);
		*out = strndup(buf, len);
		if (*out == NULL)
			abort();
	}
	explicit_bzero(buf, sizeof buf);
	if (fd >= 0)
		close(fd);
	return rc;
}

int
cli_load_secrets(cli_options *o)
{
	struct stat st;
	int rc;

	if (o->config != NULL && o->config_has_password && stat(o->config, &st) == 0)
		warn_if_shared("the config file", o->config, st.st_mode);
	rc = read_password(o->source_password_file, "source", &o->source_password);
	if (rc == TM_OK)
		rc = read_password(o->target_password_file, "target", &o->target_password);
	return rc;
}
