#!/usr/bin/env bash
# Regenerates crates/fabrik-parse/data/perftest-messages.tsv: every message perftest prints (the
# literal format string of each fprintf(stderr|stdout, ...), printf(...) and of the messages it
# formats into error_message for rdma_cm), with the first and the last
# release tag (by tag date) that has it. Reads a perftest git checkout (bare is fine); fetches nothing.
#   scripts/perftest-messages.sh /path/to/linux-rdma/perftest.git > crates/fabrik-parse/data/perftest-messages.tsv
set -euo pipefail
repo=${1:?usage: $0 PERFTEST_GIT_DIR}
export GIT_DIR=$repo
[ -d "$repo/.git" ] && export GIT_DIR=$repo/.git
printf '# message\tfirst_tag\tlast_tag (perftest src/*.c format strings, as written)\n'
for tag in $(git tag --sort=creatordate); do
  git grep -h -o -E '(fprintf\((stderr|stdout), *|printf\( *|error_message, *)"[^"]*"' "$tag" -- 'src/*.c' 'src/*.h' 2>/dev/null \
    | sed -E -e 's/^(fprintf\((stderr|stdout), *|printf\( *|error_message, *)"//' -e 's/"$//' \
    | sort -u | sed "s/\$/\t$tag/"
done | awk -F'\t' '
  { if (!($1 in first)) { first[$1] = $2; order[++n] = $1 } last[$1] = $2 }
  END { for (i = 1; i <= n; i++) print order[i] "\t" first[order[i]] "\t" last[order[i]] }' \
  | LC_ALL=C sort
