#!/usr/bin/env bash
# Boots a Linux kernel with four emulated NUMA nodes under QEMU and runs Locus's
# placement checks (tests/numa-vm/guest) inside it. See tests/numa-vm/README.md.
#
# Usage: tests/numa-vm/run.sh [--build-only]
#
#   --build-only   install what is missing, fetch the kernel, build the guest binary
#                  and the initramfs, but do not boot (also: LOCUS_VM_BUILD_ONLY=1)
#
# Environment:
#   LOCUS_VM_CACHE       where the Debian kernel and busybox are kept between runs
#                        (default /var/cache/locus-numa-vm)
#   LOCUS_VM_REFRESH=1   fetch the kernel and busybox again even when cached
#   LOCUS_VM_TIMEOUT     seconds the guest may run before it is killed (default 300)
#   LOCUS_VM_TARGET_DIR  cargo target directory of the static guest build
#                        (default: $CARGO_TARGET_DIR/numa-vm, or target/numa-vm)
#   LOCUS                the locus binary whose `omp` command runs the OpenMP check
#                        (default: `cargo build --release`, then target/release/locus)
#
# Exit status: 0 when the guest ran every check and all passed; 1 when a check
# failed, the guest printed no result, or it did not finish in time; 2 on bad usage.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${LOCUS_VM_CACHE:-/var/cache/locus-numa-vm}
boot_timeout=${LOCUS_VM_TIMEOUT:-300}
target_dir=${LOCUS_VM_TARGET_DIR:-${CARGO_TARGET_DIR:-$repo/target}/numa-vm}
build_only=${LOCUS_VM_BUILD_ONLY:-0}
refresh=${LOCUS_VM_REFRESH:-0}

for arg in "$@"; do
    case "$arg" in
        --build-only | --check) build_only=1 ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "run.sh: unknown argument '$arg' (try --help)" >&2
            exit 2
            ;;
    esac
done

# ---------------------------------------------------------------------------------
# The emulated machine. This table is the single source of the topology: the QEMU
# options below are built from it, and the same values go to the guest on the kernel
# command line, so the guest checks exactly what QEMU was asked to build.
#
# Four nodes on a 2x2 mesh: 0-1 and 2-3 are neighbours (16), 0-2 and 1-3 are one
# hop across (22), 0-3 and 1-2 are the diagonals (28). Every row holds all four
# values, so a row or column mix-up in a topology reader cannot go unnoticed.
nodes=4
cpus_per_node=2
node_mib=512
distances=(
    "10 16 22 28"
    "16 10 28 22"
    "22 28 10 16"
    "28 22 16 10"
)
# ---------------------------------------------------------------------------------

log() { printf 'numa-vm: %s\n' "$*" >&2; }
die() {
    printf 'numa-vm: error: %s\n' "$*" >&2
    exit 1
}

start_s=$SECONDS
work=$(mktemp -d "${TMPDIR:-/tmp}/locus-numa-vm.XXXXXX")
trap 'rm -rf "$work"' EXIT

# --- 1. Host packages ------------------------------------------------------------

apt_updated=0
apt_update() {
    if [ "$apt_updated" = 0 ]; then
        log "apt-get update"
        apt-get update -qq >"$work/apt.log" 2>&1 || {
            cat "$work/apt.log" >&2
            die "apt-get update failed"
        }
        apt_updated=1
    fi
}

ensure_tools() {
    local missing=()
    command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86)
    command -v cpio >/dev/null || missing+=(cpio)
    command -v xz >/dev/null || missing+=(xz-utils)
    command -v gzip >/dev/null || missing+=(gzip)
    command -v timeout >/dev/null || missing+=(coreutils)
    if [ "${#missing[@]}" -gt 0 ]; then
        [ "$(id -u)" = 0 ] || die "missing packages ${missing[*]} (run as root to install them)"
        apt_update
        log "apt-get install ${missing[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            "${missing[@]}" >"$work/apt.log" 2>&1 || {
            cat "$work/apt.log" >&2
            die "apt-get install ${missing[*]} failed"
        }
    fi
}

# Downloads the Debian package $1 into $work and unpacks it into $2.
fetch_deb() {
    local package=$1 into=$2
    (cd "$work" && apt-get download -qq "$package" >&2 2>/dev/null) ||
        (apt_update && cd "$work" && apt-get download -qq "$package" >&2) ||
        die "apt-get download $package failed"
    mkdir -p "$into"
    dpkg-deb -x "$work/${package}"_*.deb "$into"
    rm -f "$work/${package}"_*.deb
}

# --- 2. Kernel and busybox, cached ------------------------------------------------

# The versioned package linux-image-amd64 currently stands for, e.g.
# linux-image-6.1.0-56-amd64.
kernel_package() {
    local package
    package=$(apt-cache depends linux-image-amd64 2>/dev/null |
        awk '/Depends: linux-image-[0-9]/ { print $2; exit }') || true
    if [ -z "$package" ]; then
        apt_update
        package=$(apt-cache depends linux-image-amd64 |
            awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
    fi
    [ -n "$package" ] || die "cannot resolve the package behind linux-image-amd64"
    echo "$package"
}

# Writes the uncompressed ELF kernel inside bzImage $1 to $2. Booting it directly
# (QEMU's PVH entry) skips the in-guest decompression, which under TCG takes
# seconds. Returns non-zero when no known payload is found.
extract_vmlinux() {
    local bzimage=$1 out=$2 magic tool offset
    for pair in 'fd377a585a00:xz' '28b52ffd:zstd' '1f8b0800:gzip'; do
        magic=${pair%%:*}
        tool=${pair#*:}
        command -v "$tool" >/dev/null || continue
        # Every offset where the magic appears; the payload is the one that
        # decompresses to an ELF file.
        for offset in $(LC_ALL=C grep -obUaP "$(echo "$magic" | sed 's/../\\x&/g')" "$bzimage" |
            cut -d: -f1); do
            tail -c "+$((offset + 1))" "$bzimage" | "$tool" -dc 2>/dev/null >"$out" || true
            if [ "$(head -c 4 "$out" | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; then
                return 0
            fi
        done
    done
    rm -f "$out"
    return 1
}

ensure_kernel() {
    if [ "$refresh" = 1 ] || [ ! -s "$cache/kernel/vmlinuz" ]; then
        local package
        package=$(kernel_package)
        log "fetching $package"
        rm -rf "$work/kernel-deb" "$cache/kernel"
        fetch_deb "$package" "$work/kernel-deb"
        mkdir -p "$cache/kernel"
        cp "$work"/kernel-deb/boot/vmlinuz-* "$cache/kernel/vmlinuz.new"
        if extract_vmlinux "$cache/kernel/vmlinuz.new" "$cache/kernel/vmlinux.new"; then
            mv "$cache/kernel/vmlinux.new" "$cache/kernel/vmlinux"
        else
            log "no ELF kernel inside the bzImage; booting the compressed one"
        fi
        echo "$package" >"$cache/kernel/package"
        mv "$cache/kernel/vmlinuz.new" "$cache/kernel/vmlinuz"
        rm -rf "$work/kernel-deb"
    fi
    if [ -s "$cache/kernel/vmlinux" ]; then
        kernel=$cache/kernel/vmlinux
    else
        kernel=$cache/kernel/vmlinuz
    fi
    log "kernel: $(cat "$cache/kernel/package") ($(basename "$kernel"))"
}

ensure_busybox() {
    if [ "$refresh" = 1 ] || [ ! -x "$cache/busybox/busybox" ]; then
        log "fetching busybox-static"
        rm -rf "$work/busybox-deb" "$cache/busybox"
        fetch_deb busybox-static "$work/busybox-deb"
        mkdir -p "$cache/busybox"
        cp "$work/busybox-deb/bin/busybox" "$cache/busybox/busybox.new"
        mv "$cache/busybox/busybox.new" "$cache/busybox/busybox"
        rm -rf "$work/busybox-deb"
    fi
    busybox=$cache/busybox/busybox
}

# --- 3. Guest binary and initramfs ------------------------------------------------

build_guest() {
    log "building locus-numa-guest (static, release) in $target_dir"
    (cd "$repo" &&
        RUSTFLAGS="-C target-feature=+crt-static" CARGO_TARGET_DIR="$target_dir" \
            cargo build --quiet --release --target x86_64-unknown-linux-gnu \
            -p locus-numa-guest) || die "building the guest binary failed"
    guest_bin=$target_dir/x86_64-unknown-linux-gnu/release/locus-numa-guest
    [ -x "$guest_bin" ] || die "no guest binary at $guest_bin"
}

# Copies each file $2... into the initramfs root $1 at the same absolute path (links
# followed), with every shared library ldd says it loads: the guest then runs the host's
# dynamically linked programs as they are.
copy_with_libs() {
    local root=$1 file lib
    shift
    for file in "$@"; do
        mkdir -p "$root$(dirname "$file")"
        cp -L "$file" "$root$file"
        for lib in $(ldd "$file" 2>/dev/null | grep -oE '/[^ ]+' | grep -v ':$' || true); do
            [ -e "$root$lib" ] && continue
            mkdir -p "$root$(dirname "$lib")"
            cp -L "$lib" "$root$lib"
        done
    done
}

# The OpenMP check (tests/omp/numa_jacobi.c, built by gcc): a blocked Jacobi with
# `depend` whose blocks are first touched on every node, run in the guest on gcc's libgomp
# (for comparison) and on Locus's runtime through `locus omp` (at least 95% of its
# compute tasks on their out block's node with homes as strict hints). The same file
# built by clang with -DNUMA_JACOBI_AFFINITY (compute tasks name their out block in an
# affinity clause) runs on LLVM's libomp (its share printed beside) and on Locus's
# runtime (at least 95% with the affinity as a strict hint, every compute task placed by
# its clause). Locus's part needs the locus binary ($LOCUS, default
# target/release/locus) with its `omp` command; its library directory (libgomp.so.1 and
# libomp.so.5, and the runtime they load) is copied into the guest, and LLVM's libomp.so.5
# at its own path (the clang binary's RUNPATH).
build_omp_check() {
    local root=$1 libdir
    command -v gcc >/dev/null || die "gcc is needed to build tests/omp/numa_jacobi.c"
    mkdir -p "$root/omp" "$root/tmp"
    gcc -fopenmp -O2 -Wall -Wextra -Werror "$repo/tests/omp/numa_jacobi.c" -o "$work/numa_jacobi" ||
        die "building tests/omp/numa_jacobi.c failed"
    copy_with_libs "$root" "$work/numa_jacobi"
    mv "$root$work/numa_jacobi" "$root/omp/numa_jacobi"
    command -v clang >/dev/null || die "clang is needed to build tests/omp/numa_jacobi.c with affinity clauses"
    clang -fopenmp -O2 -Wall -Wextra -Werror -DNUMA_JACOBI_AFFINITY "$repo/tests/omp/numa_jacobi.c" \
        -o "$work/numa_jacobi_affinity" || die "building tests/omp/numa_jacobi.c with clang failed"
    copy_with_libs "$root" "$work/numa_jacobi_affinity"
    mv "$root$work/numa_jacobi_affinity" "$root/omp/numa_jacobi_affinity"
    locus_bin=${LOCUS:-}
    if [ -z "$locus_bin" ]; then
        # The workspace's release build: the locus binary and its OpenMP runtime.
        log "cargo build --release (the locus binary for the OpenMP check)"
        (cd "$repo" && cargo build --release --quiet) || die "cargo build --release failed"
        locus_bin=${CARGO_TARGET_DIR:-$repo/target}/release/locus
    fi
    if [ -x "$locus_bin" ] && "$locus_bin" omp --help >/dev/null 2>&1; then
        locus_bin=$(cd "$(dirname "$locus_bin")" && pwd)/$(basename "$locus_bin")
        copy_with_libs "$root" "$locus_bin"
        # The shared libraries of the directory `locus omp` puts first on
        # LD_LIBRARY_PATH (its libgomp.so.1), copied at the same path with the libraries
        # they load.
        libdir=$("$locus_bin" omp --threads 1 -- /bin/sh -c 'printf %s "$LD_LIBRARY_PATH"' | cut -d: -f1) ||
            die "$locus_bin omp --threads 1 -- /bin/sh failed"
        local f preload
        if [ -n "$libdir" ] && [ -d "$libdir" ]; then
            # Its shared libraries only: the directory may be a build directory.
            for f in "$libdir"/*.so "$libdir"/*.so.*; do
                [ -f "$f" ] && copy_with_libs "$root" "$f"
            done
        fi
        # And any library it preloads.
        preload=$("$locus_bin" omp --threads 1 -- /bin/sh -c 'printf %s "${LD_PRELOAD:-}"') || true
        for f in ${preload//:/ }; do
            [ -f "$f" ] && copy_with_libs "$root" "$f"
        done
        echo "$locus_bin" >"$root/omp/locus-path"
        log "omp check: numa_jacobi on gcc's libgomp and on $locus_bin omp (library directory ${libdir:-none})"
    else
        die "omp check: $locus_bin omp --help failed (build the locus binary, or set LOCUS)"
    fi
}

build_initramfs() {
    local root=$work/root
    mkdir -p "$root/bin" "$root/proc" "$root/sys" "$root/dev"
    cp "$busybox" "$root/bin/busybox"
    cp "$guest_bin" "$root/bin/locus-numa-guest"
    build_omp_check "$root"
    cat >"$root/init" <<'EOF'
#!/bin/busybox sh
# PID 1 of the guest: mount the kernel file systems, run the checks, report, power off.
/bin/busybox mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
echo "LOCUS-NUMA-VM: guest up: kernel $(/bin/busybox uname -r), $(/bin/busybox nproc) CPUs"
/bin/locus-numa-guest
rc=$?
# The OpenMP check: the same gcc-built binary on gcc's libgomp (printed for comparison)
# and on Locus's runtime (at least 95% of compute tasks on their out block's node).
export LD_LIBRARY_PATH=/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu PATH=/bin
/bin/busybox --install -s /bin
# Shared memory for runtimes that use it (LLVM's libomp does, through shm_open).
/bin/busybox mkdir -p /dev/shm && /bin/busybox mount -t tmpfs tmpfs /dev/shm
omp_line() { echo "$1" | grep "compute tasks on" | sed 's/^omp-jacobi: //'; }
out=$(OMP_NUM_THREADS=4 /omp/numa_jacobi 0 2>&1)
status=$?
echo "$out"
if [ "$status" = 0 ]; then
    echo "ok omp.jacobi.gomp: gcc's libgomp, 4 threads: $(omp_line "$out") (no threshold)"
else
    echo "FAIL omp.jacobi.gomp: status $status on gcc's libgomp"
    rc=1
fi
# The instrument: compute tasks that pin themselves to their out block's node are local.
out=$(NUMA_JACOBI_PIN_COMPUTE=1 OMP_NUM_THREADS=4 /omp/numa_jacobi 95 2>&1)
status=$?
echo "$out"
if [ "$status" = 0 ]; then
    echo "ok omp.jacobi.pinned: gcc's libgomp, compute tasks pinned: $(omp_line "$out") (at least 95%)"
else
    echo "FAIL omp.jacobi.pinned: status $status with compute tasks pinned to their out block's node (at least 95%)"
    rc=1
fi
if [ -f /omp/locus-path ]; then
    locus=$(cat /omp/locus-path)
    # Homes as non-strict hints (the default): thieves may take a task off its node.
    out=$("$locus" omp --threads 4 -- /omp/numa_jacobi 0 2>&1)
    status=$?
    echo "$out"
    if [ "$status" = 0 ]; then
        echo "ok omp.jacobi.locus-non-strict: locus omp --threads 4: $(omp_line "$out") (no threshold)"
    else
        echo "FAIL omp.jacobi.locus-non-strict: status $status under locus omp --threads 4 (result verified)"
        rc=1
    fi
    # Homes as strict hints: every compute task's home, found from the kernel's page
    # placement, must be its out block's node.
    out=$("$locus" omp --threads 4 --affinity strict -- /omp/numa_jacobi 95 2>&1)
    status=$?
    echo "$out"
    if [ "$status" = 0 ]; then
        echo "ok omp.jacobi.locus: locus omp --threads 4 --affinity strict: $(omp_line "$out") (at least 95%)"
    else
        echo "FAIL omp.jacobi.locus: status $status under locus omp --threads 4 --affinity strict (at least 95% of compute tasks on their out block's node, result verified)"
        rc=1
    fi
    # clang's build, compute tasks with affinity(out block): LLVM's libomp (which ignores
    # the clause; its share printed beside), then Locus's runtime, the clause as a strict
    # hint (at least 95%, and the report says every compute task was placed by it).
    out=$(OMP_NUM_THREADS=4 /omp/numa_jacobi_affinity 0 2>&1)
    status=$?
    echo "$out"
    if [ "$status" = 0 ]; then
        echo "ok omp.jacobi-affinity.libomp: LLVM's libomp, 4 threads: $(omp_line "$out") (no threshold)"
    else
        echo "FAIL omp.jacobi-affinity.libomp: status $status on LLVM's libomp"
        rc=1
    fi
    out=$("$locus" omp --threads 4 -- /omp/numa_jacobi_affinity 0 2>&1)
    status=$?
    echo "$out"
    if [ "$status" = 0 ]; then
        echo "ok omp.jacobi-affinity.locus-non-strict: locus omp --threads 4: $(omp_line "$out") (no threshold)"
    else
        echo "FAIL omp.jacobi-affinity.locus-non-strict: status $status under locus omp --threads 4 (result verified)"
        rc=1
    fi
    out=$("$locus" omp --threads 4 --affinity strict --report /tmp/affinity.json -- /omp/numa_jacobi_affinity 95 2>&1)
    status=$?
    echo "$out"
    total=$(echo "$out" | sed -n "s/.* of \([0-9]*\) compute tasks on their out block's node.*/\1/p")
    placed=$(grep '"tasks_placed_by_affinity"' /tmp/affinity.json 2>/dev/null | tr -dc 0-9)
    echo "omp-jacobi: report: $(grep -E '"tasks_(with_affinity|placed_by_affinity|on_affinity_node)"' /tmp/affinity.json 2>/dev/null | tr -d ' ",' | tr '\n' ' ')"
    if [ "$status" = 0 ] && [ -n "$total" ] && [ "$placed" = "$total" ]; then
        echo "ok omp.jacobi-affinity.locus: locus omp --threads 4 --affinity strict: $(omp_line "$out") (at least 95%; $placed placed by their affinity clause)"
    else
        echo "FAIL omp.jacobi-affinity.locus: status $status under locus omp --threads 4 --affinity strict (at least 95% of compute tasks on their out block's node, result verified, every compute task placed by its affinity clause: ${placed:-none} of ${total:-?})"
        rc=1
    fi
    # Migration of dependence memory: every block, one page each (gcc's dependence names
    # one address, whose page is what moves), first touched on node 3
    # (NUMA_JACOBI_INIT_NODE), while the tasks run on node 0: a team of one
    # (NUMA_JACOBI_TEAM=1) on Locus's 4 workers keeps its tasks on its member's worker,
    # worker 0, on node 0. Without migration the pages stay on node 3; under --migrate now
    # and next-touch every block ends on the node of the compute task that wrote it last,
    # by the kernel's placement, and the report counts its page moved: 32 pages.
    misplaced="NUMA_JACOBI_INIT_NODE=3 NUMA_JACOBI_TEAM=1"
    out=$(env $misplaced "$locus" omp --threads 4 -- /omp/numa_jacobi 0 16 1 12 2>&1)
    status=$?
    echo "$out"
    if [ "$status" = 0 ]; then
        echo "ok omp.jacobi-misplaced.locus-none: locus omp --threads 4, blocks first touched on node 3, a team of one: pages stayed there, $(omp_line "$out") (no threshold)"
    else
        echo "FAIL omp.jacobi-misplaced.locus-none: status $status under locus omp --threads 4 with every block on node 3 (result verified, pages stayed)"
        rc=1
    fi
    for m in now next-touch; do
        key=$(echo "$m" | tr - _)_pages
        out=$(env $misplaced NUMA_JACOBI_EXPECT_MOVED=1 "$locus" omp --threads 4 --migrate "$m" --report "/tmp/migrate-$m.json" -- /omp/numa_jacobi 0 16 1 12 2>&1)
        status=$?
        echo "$out"
        pages=$(grep "\"$key\"" "/tmp/migrate-$m.json" 2>/dev/null | tr -dc 0-9)
        placement=$(echo "$out" | grep "omp-jacobi: placement" | sed 's/^omp-jacobi: placement: //')
        if [ "$status" = 0 ] && [ "${pages:-0}" = 32 ]; then
            echo "ok omp.jacobi-misplaced.locus-$m: locus omp --threads 4 --migrate $m: $placement; $(omp_line "$out"); the report: $key $pages"
        else
            echo "FAIL omp.jacobi-misplaced.locus-$m: status $status under locus omp --threads 4 --migrate $m (every page on its block's last writer's node, result verified, 32 pages moved: ${pages:-none}): $placement"
            rc=1
        fi
    done
else
    echo "FAIL omp.jacobi.locus: the locus binary was not copied into the guest"
    rc=1
fi
if [ "$rc" = 0 ]; then
    echo "LOCUS-NUMA-VM: PASS"
else
    echo "LOCUS-NUMA-VM: FAIL (checks exited with status $rc)"
fi
/bin/busybox poweroff -f
EOF
    chmod 755 "$root/init"
    initrd=$work/initrd.cpio.gz
    (cd "$root" && find . | LC_ALL=C sort | cpio --quiet -o -H newc -R 0:0) |
        gzip -1 >"$initrd"
}

# --- 4. Boot ------------------------------------------------------------------------

qemu_numa_args() {
    local n i j row
    for ((n = 0; n < nodes; n++)); do
        qemu_args+=(-object "memory-backend-ram,id=m$n,size=${node_mib}M")
        qemu_args+=(-numa "node,nodeid=$n,cpus=$((n * cpus_per_node))-$(((n + 1) * cpus_per_node - 1)),memdev=m$n")
    done
    # One direction per pair: QEMU mirrors it.
    for ((i = 0; i < nodes; i++)); do
        read -r -a row <<<"${distances[$i]}"
        for ((j = i + 1; j < nodes; j++)); do
            qemu_args+=(-numa "dist,src=$i,dst=$j,val=${row[$j]}")
        done
    done
}

# The distance matrix as the guest reads it: rows joined by '/', entries by ','.
distances_param() {
    local out="" row
    for row in "${distances[@]}"; do
        out+="${out:+/}${row// /,}"
    done
    echo "$out"
}

boot() {
    local cpus=$((nodes * cpus_per_node))
    qemu_args=(
        -accel tcg -cpu max -machine q35
        -m "$((nodes * node_mib))M"
        -smp "$cpus,sockets=$nodes,cores=$cpus_per_node,threads=1"
    )
    qemu_numa_args
    # Parameters without a dot that the kernel does not know reach init as
    # environment variables: that is how the guest learns what to expect.
    local append="console=ttyS0 panic=-1 quiet loglevel=3"
    append+=" numa_balancing=disable transparent_hugepage=never"
    append+=" LOCUS_VM_NODES=$nodes LOCUS_VM_CPUS_PER_NODE=$cpus_per_node"
    append+=" LOCUS_VM_NODE_MIB=$node_mib LOCUS_VM_DISTANCES=$(distances_param)"
    qemu_args+=(
        -kernel "$kernel" -initrd "$initrd" -append "$append"
        -display none -monitor none -serial stdio -no-reboot
    )

    log "booting: $nodes nodes x $cpus_per_node CPUs, ${node_mib} MiB each, timeout ${boot_timeout}s"
    console=$work/console.log
    local boot_s=$SECONDS status
    set +e
    timeout --kill-after=10 "$boot_timeout" qemu-system-x86_64 "${qemu_args[@]}" </dev/null 2>&1 |
        tr -d '\r' | tee "$console"
    status=${PIPESTATUS[0]}
    set -e
    log "guest finished in $((SECONDS - boot_s))s (qemu status $status)"
    if [ "$status" = 124 ] || [ "$status" = 137 ]; then
        log "the guest did not finish within ${boot_timeout}s"
    fi
}

# --- 5. Verdict -----------------------------------------------------------------------

verdict() {
    local summary
    summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$console" | tail -n 1) || true
    if grep -qx 'LOCUS-NUMA-VM: PASS' "$console" && [ -n "$summary" ] &&
        ! grep -q '^FAIL ' "$console" && [[ "$summary" == *" passed, 0 failed" ]]; then
        log "PASS in $((SECONDS - start_s))s"
        echo "$summary"
        return 0
    fi
    if [ -z "$summary" ]; then
        log "FAIL: the guest reported no result"
    else
        log "FAIL: $(grep -c '^FAIL ' "$console" || true) failing checks"
        grep '^FAIL ' "$console" >&2 || true
    fi
    return 1
}

ensure_tools
ensure_kernel
ensure_busybox
build_guest
build_initramfs
if [ "$build_only" = 1 ]; then
    log "built $(du -h "$initrd" | cut -f1) initramfs; not booting (--build-only)"
    exit 0
fi
boot
verdict
