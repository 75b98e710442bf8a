#include "snap_split.h"

int
snap_split_count(long long est_rows, long long est_bytes, long chunk_rows, long long chunk_bytes,
                 int readers)
{
	long long chunks = 0, n;

	if (readers < 2)
		return 1;
	if (est_bytes > 0 && chunk_bytes > 0)
		chunks = est_bytes / chunk_bytes;
	if (est_rows > 0 && chunk_rows > 0 && est_rows / chunk_rows > chunks)
		chunks = est_rows / chunk_rows;
	if (chunks < SNAP_SPLIT_MIN_CHUNKS)
		return 1;
	n = chunks / SNAP_SPLIT_CHUNKS_PER_RANGE;
	if (n > (long long) readers * SNAP_SPLIT_PER_READER)
		n = (long long) readers * SNAP_SPLIT_PER_READER;
	if (n > SNAP_SPLIT_MAX_RANGES)
		n = SNAP_SPLIT_MAX_RANGES;
	return n < 2 ? 1 : (int) n;
}

int
snap_split_pick(int ncand, int nranges, int *idx)
{
	int n = 0;

	if (ncand <= 0 || nranges < 2)
		return 0;
	for (int i = 1; i < nranges; i++) {
		/* the i-th of nranges quantiles; among few candidates, each once */
		int at = (int) (((long long) i * ncand) / nranges);

		if (at >= ncand)
			at = ncand - 1;
		if (n > 0 && at <= idx[n - 1])
			continue;
		idx[n++] = at;
	}
	return n;
}
