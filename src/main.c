#include <stdio.h>

int
main(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	puts("tidemark");
	return 0;
}
