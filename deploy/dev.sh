#!/usr/bin/env bash
# The developer entry point. Idempotent: each command installs what is
# missing (Debian packages, the Python virtual environment), then builds.
#
#   deploy/dev.sh build   install what is missing, configure and build
#   deploy/dev.sh test    build, then run every test (CTest, and pytest in two processes; a
#                         selection of the Python tests again on the nrt backend over the fake
#                         libnrt), build the Debian packages and install and purge them (as
#                         `package`, quicker), and the C++ suites that take hostile input again
#                         under AddressSanitizer and UndefinedBehaviorSanitizer (`sanitize`: all)
#   deploy/dev.sh demo    build, train a small MLP and transformer on neuron (embedded daemon)
#   deploy/dev.sh bench   build, run every benchmark; the last line is one JSON object
#   deploy/dev.sh sanitize  build the daemon, client and C++ tests with AddressSanitizer and
#                           UndefinedBehaviorSanitizer (in build-asan/) and run them, then the
#                           Python suite against the sanitized daemon
#   deploy/dev.sh tsan [CTEST ARGS]  build the daemon, client and C++ tests with ThreadSanitizer
#                           (in build-tsan/, against an Abseil rebuilt with it once) and run them
#   deploy/dev.sh fuzz [SECONDS]  build every fuzz target with Clang's libFuzzer, AddressSanitizer
#                           and UBSan (in build-fuzz/), run each for SECONDS (default 60)
#   deploy/dev.sh chaos [N]  build, run the chaos tests (clients and daemons killed at random,
#                           leaks checked) N times each (default 100; CTest runs 5)
#   deploy/dev.sh models  build, run every model of the model suite (tests/models) against its
#                           CPU twin; prints N/M models (`test` runs the small ones)
#   deploy/dev.sh conformance  build, run every sample of PyTorch's OpInfo database on neuron
#                           against the CPU (tests/conformance); prints the pass rate (`test`
#                           runs the first sample of each operator and mode)
#   deploy/dev.sh nki     build, run the NKI kernel suite (tests/nki: kernels in both NKI APIs
#                           against NumPy goldens, in nki.simulate, on neuron and compiled) at
#                           full size (`test` runs it small)
#   deploy/dev.sh nki-published [RUNNER ARGS]  build, run NKI kernels AWS publishes against
#                           goldens (tests/nki_published/run.py; the kernels stay outside the
#                           repository: pass checkouts of them, --help lists the options)
#   deploy/dev.sh upstream-tests --pytorch-src DIR [--only FILE] [RUNNER ARGS]  build, run
#                           PyTorch's device-generic suites from a PyTorch checkout on neuron,
#                           each file in its own process, against tests/upstream_xfail.json
#                           (tests/upstream/run.py --help lists the options)
#   deploy/dev.sh package  build the Debian packages (debian/, in build-deb/; the .deb files in
#                           build-deb/debs/), then install, check and purge them on a throwaway
#                           overlay of this system (needs root)
#
# Environment: BUILD_DIR (default: build), BUILD_TYPE (default: RelWithDebInfo),
# PYTHON (interpreter that creates .venv; default: python3).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}"
VENV="$ROOT/.venv"
TORCH_VERSION="2.13.0"
# ccache hits across checkouts in different directories (CI clones afresh),
# and in the package build, whose HOME debhelper moves.
export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1
export CCACHE_DIR="${CCACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ccache}"

APT_PACKAGES=(
  g++ cmake ninja-build pkg-config ccache
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libspdlog-dev libfmt-dev libtomlplusplus-dev libcli11-dev nlohmann-json3-dev
  libsystemd-dev libgtest-dev libgmock-dev libxxhash-dev zlib1g-dev libfabric-dev libfabric1
  prometheus-cpp-dev libcpp-httplib-dev
  python3-dev python3-venv procps
  debhelper help2man
)
PYTHON_PACKAGES=("torch==$TORCH_VERSION" pytest numpy ml_dtypes scikit-build-core)
# Test-only Python packages (the model suite, Hugging Face Transformers and
# Accelerate; pytest-xdist, which runs the suites in a process per CPU;
# pyarrow for the profiler's Parquet metrics, the `profiling`
# extra; TorchTitan and what it imports, triton included: its MoE kernels
# import triton unconditionally, which a CUDA torch would have brought),
# pinned. torchvision and timm go in without their dependencies, which would
# replace the CPU torch with PyPI's CUDA build.
TEST_PYTHON_PACKAGES=(pillow==13.0.0 PyYAML==6.0.4 huggingface_hub==2.4.0 safetensors==0.8.0
                      pyarrow==26.0.1 transformers==5.24.0 accelerate==1.16.0 expecttest==0.3.0
                      torchtitan==0.2.2 torchdata==0.11.0 datasets==5.2.0 tokenizers==0.23.3
                      tyro==1.0.17 tensorboard==2.21.0 einops==0.8.2 tomli==2.5.0 triton==3.9.0
                      pytest-xdist==3.8.0)
TEST_PYTHON_PACKAGES_NO_DEPS=(torchvision==0.28.0 timm==1.0.31)

log() { printf '\033[1m[dev.sh]\033[0m %s\n' "$*" >&2; }
die() { printf '[dev.sh] error: %s\n' "$*" >&2; exit 1; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    die "installing Debian packages needs root: run as root, or install: $*"
  fi
}

ensure_apt_packages() {
  local missing=()
  for package in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$package")
  done
  [ "${#missing[@]}" -eq 0 ] && return
  log "installing Debian packages: ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
}

ensure_venv() {
  if [ ! -x "$VENV/bin/python" ]; then
    log "creating the virtual environment $VENV"
    "${PYTHON:-python3}" -m venv "$VENV"
  fi
  if ! "$VENV/bin/python" - "$TORCH_VERSION" <<'PY' 2>/dev/null; then
import sys, importlib.metadata as md
assert md.version("torch").split("+")[0] == sys.argv[1]
md.version("pytest"); md.version("numpy"); md.version("ml_dtypes"); md.version("scikit-build-core")
PY
    log "installing ${PYTHON_PACKAGES[*]} into $VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check "${PYTHON_PACKAGES[@]}"
  fi
}

ensure_test_packages() {
  ensure_venv
  if ! "$VENV/bin/python" - "${TEST_PYTHON_PACKAGES[@]}" "${TEST_PYTHON_PACKAGES_NO_DEPS[@]}" \
      <<'PY' 2>/dev/null; then
import sys, importlib.metadata as md
for pin in sys.argv[1:]:
    name, version = pin.split("==")
    assert md.version(name) == version, pin
PY
    log "installing the test packages ${TEST_PYTHON_PACKAGES[*]} ${TEST_PYTHON_PACKAGES_NO_DEPS[*]}"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check "${TEST_PYTHON_PACKAGES[@]}"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps \
      "${TEST_PYTHON_PACKAGES_NO_DEPS[@]}"
  fi
}

# One build: pip (scikit-build-core) drives the top-level CMake in
# $BUILD_DIR, which also holds the C++ tests, and installs torch_neuronx into
# .venv in editable mode (Python files from torch_plugin/, the extension and
# the neuron-rtd/neuronctl binaries copied in).
cmd_build() {
  ensure_apt_packages
  ensure_venv
  log "building and installing torch_neuronx into $VENV (editable)"
  CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" "$VENV/bin/pip" install --quiet \
    --disable-pip-version-check --no-build-isolation --no-deps --editable "$ROOT" \
    -Cbuild-dir="$BUILD_DIR" -Ccmake.build-type="$BUILD_TYPE" \
    -Ccmake.define.NEURON_BUILD_TESTS=ON -Ccmake.define.NEURON_WERROR=ON \
    -Ccmake.define.NEURON_BUILD_EXPORTER=ON -Ccmake.define.NEURON_PYTHON="$VENV/bin/python"
}

# promtool checks the exporter's exposition and the alert rules in the tests.
# Only the binary is taken from Debian's prometheus package, not the package
# installed: its maintainer scripts would start a Prometheus server.
PROMTOOL="$BUILD_DIR/tools/promtool"
ensure_promtool() {
  [ -x "$PROMTOOL" ] && return
  local work
  work="$(mktemp -d)"
  if ! (cd "$work" && apt-get download -qq prometheus >/dev/null 2>&1); then
    as_root apt-get update -qq
    (cd "$work" && apt-get download -qq prometheus >/dev/null 2>&1) ||
      die "could not download Debian's prometheus package (for promtool)"
  fi
  dpkg-deb --fsys-tarfile "$work"/prometheus_*.deb | tar -x -C "$work" ./usr/bin/promtool
  mkdir -p "$(dirname "$PROMTOOL")"
  mv "$work/usr/bin/promtool" "$PROMTOOL"
  rm -rf "$work"
}

# pytest in a process per CPU (at most four: each holds a daemon and models
# of up to a few GiB), a test file per process (its module fixtures stay in
# one process); each process starts its own daemon (tests/conftest.py).
PYTEST_PARALLEL=(-n "$(($(nproc) < 4 ? $(nproc) : 4))" --dist loadfile)

cmd_test() {
  cmd_build
  ensure_test_packages
  ensure_promtool
  log "running C++ tests (CTest)"
  (cd "$BUILD_DIR" && NEURON_PROMTOOL="$PROMTOOL" \
    ctest --output-on-failure --parallel "$(nproc)" --timeout 300)
  log "running Python tests (pytest), the small models of the model suite, the fast slice"
  log "of the OpInfo conformance suite and the NKI kernel suite at small size"
  "$VENV/bin/python" -m pytest -q "${PYTEST_PARALLEL[@]}" "$ROOT/tests/python" "$ROOT/tests/models" \
    "$ROOT/tests/conformance" "$ROOT/tests/nki"
  nrt_python_tests
  # The fast slice of `package`.
  package_slice
  # The fast slice of `sanitize`: the hostile-input C++ suites under ASan and UBSan.
  sanitized_cpp_tests slice
}

# The Python tests of copies, streams, events, memory, errors (a killed
# client among them), operators, eager training, NKI kernels and collectives
# across hosts (which stage through host memory there) again, against
# neuron-rtd on its nrt backend over the fake libnrt (tests/fake_nrt).
nrt_python_tests() {
  log "running Python tests on the nrt backend over the fake libnrt"
  NEURON_TEST_DEVICE_BACKEND=nrt NEURON_TEST_FAKE_NRT="$BUILD_DIR/lib/fake_nrt/libnrt.so.1" \
    "$VENV/bin/python" -m pytest -q "${PYTEST_PARALLEL[@]}" "$ROOT/tests/python/test_streams.py" \
    "$ROOT/tests/python/test_memory.py" "$ROOT/tests/python/test_errors.py" \
    "$ROOT/tests/python/test_views.py" "$ROOT/tests/python/test_ops.py" \
    "$ROOT/tests/python/test_training.py" "$ROOT/tests/python/test_daemon_interaction.py" \
    "$ROOT/tests/python/test_neff.py" "$ROOT/tests/python/test_profiling.py" \
    "$ROOT/tests/python/test_nki.py" "$ROOT/tests/python/test_nki_rules.py" \
    "$ROOT/tests/python/test_nki_daemon.py" "$ROOT/tests/python/test_nki_estimate.py" \
    "$ROOT/tests/python/test_distributed_hosts.py::test_every_collective_and_dtype_across_two_hosts" \
    "$ROOT/tests/python/test_distributed_hosts.py::test_point_to_point_all_to_all_gather_scatter_across_hosts"
}

cmd_demo() {
  cmd_build
  local neuronctl="$BUILD_DIR/bin/neuronctl"
  log "training on neuron (examples/train.py); with no daemon running, the first use of the"
  log "device starts a per-user neuron-rtd on the simulated Trainium"
  "$VENV/bin/python" "$ROOT/examples/train.py" --steps "${DEMO_STEPS:-10}" &
  local trainer=$!
  # Show the training process's session while it runs.
  local shown=0
  while kill -0 "$trainer" 2>/dev/null; do
    if [ "$shown" -eq 0 ] && "$neuronctl" ps 2>/dev/null | grep -q "torch_neuronx pid $trainer"; then
      log "neuronctl ps (during training)"
      "$neuronctl" ps
      shown=1
    fi
    sleep 0.5
  done
  wait "$trainer"
  log "neuronctl ls"
  "$neuronctl" ls
}

# A second build tree of the daemon, libneuronrt and the C++ tests with
# AddressSanitizer and UndefinedBehaviorSanitizer; the extension module stays
# unsanitized (Python would need the sanitizer runtime preloaded) and drives
# the sanitized daemon instead.
SANITIZE_DIR="$ROOT/build-asan"

# The fast slice of `sanitize` that `test` (CI) runs: the suites that feed
# the daemon what a hostile client or peer can send (records, RPCs,
# executables, NKI kernels, fabric messages, configuration, the records of a
# shared compiled-graph cache), the units that decode it, and the chaos
# tests' killed clients. `sanitize` builds and runs every suite.
SANITIZER_SLICE_TARGETS=(command_ring_abi_test config_test compiler_test core_queue_test memory_test
                         nki_kernel_check_test nki_interpreter_test data_plane_test
                         host_collectives_test chaos_test chaos_client record_decoder_fuzz
                         executable_load_fuzz rpc_fuzz fabric_message_fuzz)

# sanitized_cpp_tests [slice]: every C++ suite, or with `slice` the targets
# above (CTest skips the placeholders of suites that were not built).
sanitized_cpp_tests() {
  local targets=() skip=()
  if [ "${1:-}" = slice ]; then
    targets=(--target "${SANITIZER_SLICE_TARGETS[@]}")
    skip=(-E '_NOT_BUILT$')
  fi
  log "building with AddressSanitizer and UndefinedBehaviorSanitizer in $SANITIZE_DIR${1:+ (${1})}"
  cmake -S "$ROOT" -B "$SANITIZE_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DNEURON_SANITIZE=address,undefined -DNEURON_WERROR=ON -DNEURON_BUILD_TESTS=ON \
    -DNEURON_PYTHON="$VENV/bin/python" >/dev/null
  cmake --build "$SANITIZE_DIR" --parallel "$(nproc)" "${targets[@]}"
  log "running the C++ tests under the sanitizers (leaks included)"
  (cd "$SANITIZE_DIR" && ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --output-on-failure --parallel "$(nproc)" --timeout 600 "${skip[@]}")
}

cmd_sanitize() {
  cmd_build
  sanitized_cpp_tests
  log "running the Python tests against the sanitized daemon"
  local reports
  reports="$(mktemp -d)"
  # Leaks are not checked here: the daemon is stopped by signal at the end.
  ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:log_path=$reports/asan" \
    UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$reports/ubsan" \
    NEURON_RTD_BINARY="$SANITIZE_DIR/bin/neuron-rtd" "$VENV/bin/python" -m pytest -q "$ROOT/tests/python"
  if compgen -G "$reports/*" >/dev/null; then
    cat "$reports"/* >&2
    die "the sanitized daemon reported errors (above)"
  fi
  log "sanitizers: clean"
}

# ThreadSanitizer needs every synchronisation primitive instrumented, and
# every lock of ours is an absl::Mutex: Debian's Abseil is rebuilt from
# Debian's own source package (the installed version, its patches and its
# options, so gRPC's shared libraries run on it too) with -fsanitize=thread,
# once, into $TSAN_DIR/abseil. The daemon, the client and the C++ tests are
# then built against it and run with it preloaded ahead of Debian's.
TSAN_DIR="$ROOT/build-tsan"

ensure_tsan_abseil() {
  local version prefix="$TSAN_DIR/abseil/prefix" work="$TSAN_DIR/abseil"
  version="$(dpkg-query -W -f='${source:Version}' libabsl-dev)"
  if [ -f "$prefix/.version" ] && [ "$(cat "$prefix/.version")" = "$version" ]; then
    return
  fi
  log "building Abseil $version with ThreadSanitizer in $work (once)"
  rm -rf "$work"
  mkdir -p "$work/lists/partial" "$work/cache/archives/partial"
  local codename
  codename="$(. /etc/os-release && echo "$VERSION_CODENAME")"
  local keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  cat >"$work/sources.list" <<SOURCES
deb-src [signed-by=$keyring] http://deb.debian.org/debian $codename main
deb-src [signed-by=$keyring] http://deb.debian.org/debian $codename-updates main
deb-src [signed-by=$keyring] http://deb.debian.org/debian-security $codename-security main
SOURCES
  # A private source list and state: the host's apt configuration is untouched.
  local apt_options=(-o "Dir::Etc::SourceList=$work/sources.list" -o "Dir::Etc::SourceParts=/nonexistent"
    -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache")
  apt-get "${apt_options[@]}" update -qq
  (cd "$work" && apt-get "${apt_options[@]}" source -qq "abseil=$version" >/dev/null 2>&1) ||
    die "could not fetch Debian's source of abseil $version"
  local source_dir
  source_dir="$(find "$work" -maxdepth 1 -type d -name 'abseil-*' | head -n 1)"
  [ -n "$source_dir" ] || die "apt-get source left no abseil-* directory in $work"
  cmake -S "$source_dir" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_STANDARD=17 -DBUILD_SHARED_LIBS=ON -DCMAKE_INSTALL_PREFIX="$prefix" \
    -DCMAKE_CXX_FLAGS=-fsanitize=thread -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread >/dev/null
  cmake --build "$work/build" --parallel "$(nproc)" --target install >/dev/null
  echo "$version" >"$prefix/.version"
}

cmd_tsan() {
  ensure_apt_packages
  ensure_venv
  ensure_tsan_abseil
  local prefix="$TSAN_DIR/abseil/prefix"
  log "building with ThreadSanitizer in $TSAN_DIR"
  cmake -S "$ROOT" -B "$TSAN_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DNEURON_SANITIZE=thread -DNEURON_WERROR=ON -DNEURON_BUILD_TESTS=ON \
    -DCMAKE_PREFIX_PATH="$prefix" -DNEURON_PYTHON="$VENV/bin/python" >/dev/null
  cmake --build "$TSAN_DIR" --parallel "$(nproc)"
  # Suites whose calls cross gRPC, which stays uninstrumented (Debian's build;
  # rebuilding it with TSan would take about an hour here): gRPC hands each
  # call's objects between its threads without TSan seeing how, so every RPC
  # looks racy. They run unless CTest arguments are given.
  local args=("$@")
  [ "${#args[@]}" -gt 0 ] ||
    args=(-E '^(DaemonE2eTest|DaemonLifecycleTest|DataPlaneTest|ExecutableTest|ExecutableLimitsTest|ChaosTest)\.|^rpc_fuzz_replay$')
  log "running the C++ tests under ThreadSanitizer (${args[*]})"
  (cd "$TSAN_DIR" && LD_LIBRARY_PATH="$prefix/lib" \
    TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$ROOT/tests/cpp/tsan.supp" \
    ctest --output-on-failure --parallel "$(nproc)" --timeout 900 "${args[@]}")
}

FUZZ_TARGETS=(record_decoder_fuzz executable_load_fuzz rpc_fuzz fabric_message_fuzz)

cmd_fuzz() {
  local seconds="${1:-60}"
  ensure_apt_packages
  ensure_venv
  local missing=()
  for package in clang libclang-rt-14-dev; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$package")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    log "installing ${missing[*]} for libFuzzer"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      "${missing[@]}" >/dev/null
  fi
  local dir="$ROOT/build-fuzz" flags="-fsanitize=fuzzer-no-link,address,undefined"
  log "building the fuzz targets with Clang in $dir"
  CC=clang CXX=clang++ cmake -S "$ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DNEURON_BUILD_TORCH_PLUGIN=OFF -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
    -DNEURON_PYTHON="$VENV/bin/python" >/dev/null
  cmake --build "$dir" --parallel "$(nproc)" --target "${FUZZ_TARGETS[@]}"
  local failed=0 target corpus work
  for target in "${FUZZ_TARGETS[@]}"; do
    corpus="$ROOT/tests/fuzz/corpus/${target%_fuzz}"
    work="$(mktemp -d)"
    log "fuzzing $target for $seconds s"
    # New inputs go to a scratch directory; the repository's seeds are read.
    # UBSan stops at its first report, so that libFuzzer keeps the input as
    # a crash (by default it prints and goes on, and the run passes).
    if ! ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        "$dir/bin/$target" -max_total_time="$seconds" \
        -print_final_stats=1 -artifact_prefix="$work/" "$work" \
        $([ -d "$corpus" ] && echo "$corpus") 2>"$work/log"; then
      failed=1
      log "$target found a crash; its input and log are in $work"
    fi
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$work/log" | sed "s/^/  $target /" >&2
  done
  [ "$failed" -eq 0 ] || die "a fuzz target crashed"
  log "fuzzing: no crash"
}

cmd_models() {
  cmd_build
  ensure_test_packages
  log "the model suite: every model against its CPU twin"
  NEURON_MODELS=all "$VENV/bin/python" -m pytest -q "$ROOT/tests/models"
}

cmd_conformance() {
  cmd_build
  ensure_test_packages
  log "the OpInfo conformance suite: every sample on neuron against the CPU"
  NEURON_CONFORMANCE=all "$VENV/bin/python" -m pytest -q "$ROOT/tests/conformance"
}

cmd_nki() {
  cmd_build
  ensure_test_packages
  log "the NKI kernel suite at full size"
  NKI_SUITE_SIZE=full "$VENV/bin/python" -m pytest -q "$ROOT/tests/nki"
}

cmd_nki_published() {
  cmd_build
  ensure_test_packages
  "$VENV/bin/python" "$ROOT/tests/nki_published/run.py" "$@"
}

cmd_upstream_tests() {
  cmd_build
  ensure_test_packages
  "$VENV/bin/python" "$ROOT/tests/upstream/run.py" "$@"
}

cmd_chaos() {
  local repetitions="${1:-100}"
  cmd_build
  log "chaos tests, $repetitions repetitions each"
  NEURON_CHAOS_REPETITIONS="$repetitions" "$BUILD_DIR/bin/chaos_test"
}

# dpkg-buildpackage -b's steps, run from here so that nothing lands in the
# repository's parent directory (.changes, .buildinfo) and build-deb/ stays
# for the next build; then the install, check and purge test, which needs
# root (`skip-without-root`: said and skipped instead of failing).
build_and_test_packages() {
  local debs="$ROOT/build-deb/debs"
  rm -rf "$debs" && mkdir -p "$debs"
  log "building the Debian packages into $debs"
  (
    cd "$ROOT"
    dpkg-checkbuilddeps
    # The build runs again each time, incremental in build-deb/ but
    # configured afresh: CMake reads the compiler flags from the environment
    # only into a new cache.
    rm -f debian/debhelper-build-stamp build-deb/CMakeCache.txt
    export DEB_BUILD_OPTIONS="parallel=$(nproc) noddebs" NEURON_PYTHON="$VENV/bin/python" \
      NEURON_DEB_DIR="$debs"
    debian/rules build
    debian/rules binary
  )
  ls -l "$debs"
  if [ "${1:-}" = skip-without-root ] && [ "$(id -u)" -ne 0 ] && ! sudo -n true 2>/dev/null; then
    log "skipped the packages' install and purge test: it needs root (deploy/dev.sh package)"
    return
  fi
  log "installing, checking and purging them on an overlay of this system"
  as_root "$ROOT/tests/package/install_purge_test.sh" "$debs"
}

cmd_package() {
  ensure_apt_packages
  ensure_venv
  build_and_test_packages
}

# The fast slice of `package`: the same packages, built with the test
# build's compiler flags (its objects come from ccache) instead of Debian's
# hardening flags, and compressed quickly.
package_slice() {
  (
    export DEB_CFLAGS_SET="-O2 -g1 -DNDEBUG" DEB_CXXFLAGS_SET="-O2 -g1 -DNDEBUG" DEB_CPPFLAGS_SET="" \
      DEB_LDFLAGS_SET="" NEURON_CMAKE_ARGS="-DNEURON_WERROR=ON" NEURON_DPKG_DEB_ARGS="-Zgzip -z1"
    build_and_test_packages skip-without-root
  )
}

cmd_bench() {
  cmd_build
  ensure_test_packages
  "$VENV/bin/python" "$ROOT/bench/run.py" --build-dir "$BUILD_DIR"
}

case "${1:-}" in
  build) cmd_build ;;
  test) cmd_test ;;
  demo) cmd_demo ;;
  bench) cmd_bench ;;
  sanitize) cmd_sanitize ;;
  tsan) shift; cmd_tsan "$@" ;;
  fuzz) shift; cmd_fuzz "$@" ;;
  chaos) shift; cmd_chaos "$@" ;;
  models) cmd_models ;;
  conformance) cmd_conformance ;;
  nki) cmd_nki ;;
  nki-published) shift; cmd_nki_published "$@" ;;
  upstream-tests) shift; cmd_upstream_tests "$@" ;;
  package) cmd_package ;;
  *)
    sed -n '2,42p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
