#ifndef TIDEMARK_MIGRATE_H
#define TIDEMARK_MIGRATE_H
#include <stddef.h>
typedef struct migrate_script {
	int version;
	const char *name;
	const char *sql;
} migrate_script;
extern const migrate_script migrate_source_scripts[];
extern const migrate_script migrate_target_scripts[];
#endif
