/*
 * pgtest_http.c: a plain-socket HTTP/1.0 client and TCP ports on loopback,
 * for tests of tidemark's metrics endpoint. Only loopback addresses are
 * ever contacted.
 */
#include "pgtest_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Waits until fd is ready for events or the deadline passes. */
static bool
wait_fd(int fd, short events, double deadline)
{
	for (;;) {
		struct pollfd p = {fd, events, 0};
		double left = deadline - now_s();
		int rc;

		if (left <= 0)
			return false;
		rc = poll(&p, 1, (int) (left * 1000) + 1);
		if (rc > 0)
			return true;
		if (rc < 0 && errno != EINTR)
			return false;
	}
}

static int
connect_loopback(int port, double deadline)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t) port)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int err = 0;
	socklen_t len = sizeof err;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *) &a, sizeof a) == 0)
		return fd;
	if (errno != EINPROGRESS || !wait_fd(fd, POLLOUT, deadline) ||
	    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Sends all of text; false on an error or the deadline. */
static bool
send_all(int fd, const char *text, double deadline)
{
	size_t len = strlen(text), off = 0;

	while (off < len) {
		ssize_t n = send(fd, text + off, len - off, MSG_NOSIGNAL);

		if (n > 0)
			off += (size_t) n;
		else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			if (!wait_fd(fd, POLLOUT, deadline))
				return false;
		} else
			return false;
	}
	return true;
}

/* Everything until the server closes; NULL on an error or the deadline. */
static char *
read_all(int fd, double deadline)
{
	strbuf sb = STRBUF_INIT;
	char buf[8192];

	for (;;) {
		ssize_t n = recv(fd, buf, sizeof buf, 0);

		if (n > 0)
			strbuf_appendn(&sb, buf, (size_t) n);
		else if (n == 0)
			return strbuf_steal(&sb);
		else if ((errno != EAGAIN && errno != EINTR) || !wait_fd(fd, POLLIN, deadline)) {
			strbuf_free(&sb);
			return NULL;
		}
	}
}

int
pgtest_http_get(int port, const char *method, const char *path, double timeout_s,
                char **headers, char **body)
{
	double deadline = now_s() + timeout_s;
	int fd = connect_loopback(port, deadline), status = 0;
	char *request, *response = NULL, *sep;

	if (headers != NULL)
		*headers = NULL;
	if (body != NULL)
		*body = NULL;
	if (fd < 0)
		return 0;
	request = pgt_format("%s %s HTTP/1.0\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n",
	                     method, path, port);
	if (send_all(fd, request, deadline))
		response = read_all(fd, deadline);
	free(request);
	close(fd);
	if (response == NULL || sscanf(response, "HTTP/1.%*d %d", &status) != 1 ||
	    (sep = strstr(response, "\r\n\r\n")) == NULL) {
		free(response);
		return 0;
	}
	*sep = '\0';
	if (body != NULL)
		*body = pgt_strdup(sep + 4);
	if (headers != NULL)
		*headers = pgt_strdup(response);
	free(response);
	return status;
}

int
pgtest_tcp_listen(int *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
	socklen_t len = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *) &a, sizeof a) != 0 || listen(fd, 8) != 0 ||
	    getsockname(fd, (struct sockaddr *) &a, &len) != 0)
		pgt_fail(__FILE__, __LINE__, "cannot listen on a port of 127.0.0.1: %s", strerror(errno));
	*port = ntohs(a.sin_port);
	return fd;
}

int
pgtest_free_port(void)
{
	int port;

	close(pgtest_tcp_listen(&port));
	return port;
}
