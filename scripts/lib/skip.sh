# Sourced by the suites in scripts/test.d/. A suite, or one part of it, that cannot run here
# says why and is skipped, unless every testbed must be present: with FABRIK_REQUIRE_TESTBEDS=1,
# which .ci/run sets (CI installs and can build every testbed), the missing testbed fails the
# suite, so CI cannot go green with a suite that never ran.
#
#   skip SUITE WHY...       the whole suite: exit 0 with a message, or exit 1 when required
#   skip_part SUITE WHY...  one part: a message and on to the next part, or exit 1 when required
#   no_gpu SUITE WHY...     the one exception: no NVIDIA driver. CI has no GPU, so the GPU
#                           suites run only where a driver is installed, required or not.

skip_required() {
  [ "${FABRIK_REQUIRE_TESTBEDS:-}" = 1 ] || return 1
  local suite=$1
  shift
  echo "$suite: FAIL: cannot run here ($*), and FABRIK_REQUIRE_TESTBEDS=1 says every testbed must be present" >&2
  exit 1
}

skip() {
  skip_required "$@"
  local suite=$1
  shift
  echo "$suite: SKIP: $*"
  exit 0
}

skip_part() {
  skip_required "$@"
  local suite=$1
  shift
  echo "$suite: SKIP: $*"
}

no_gpu() {
  local suite=$1
  shift
  echo "$suite: SKIP: $* (no GPU here: the one testbed FABRIK_REQUIRE_TESTBEDS does not require)"
  exit 0
}
