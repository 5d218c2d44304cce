#!/usr/bin/env bash
# Installs the Debian packages ecnswitch's build, tests and testbed need,
# when they are missing, and the Go modules. Idempotent; quiet when
# everything is present; never asks a question (CI has no terminal).
#
#   iproute2, ethtool  the testbed and the tests (ip, ethtool)
#   tshark             the capture tests' cross-check of the files ecnswitch writes
#   systemd            systemd-analyze, which checks the unit make install installs
#   iputils-ping       the ping that `ecnswitch testbed up` suggests trying
#   linux-perf         perf, with which the README's profiles were taken
#   groff-base         groff, which checks the man page docs/ecnswitch.1
#   iperf3             the TCP load of the README's runtime-control example
#
# With --testpmd (make bench-tcp), also DPDK's testpmd and its AF_XDP
# driver, the peer bench tcp compares ecnswitch with; with --peers (make
# bench-switch), testpmd and Open vSwitch, bench switch's peers. OVS's
# daemons are not started system-wide: bench switch runs its own.
#
# With --dev, also what `go generate` needs to rebuild the committed BPF
# objects (testbed/dctcp, testbed/ect1): clang, llvm (llvm-strip), libbpf-dev (bpf_helpers.h)
# and bpftool. Building and testing need none of them.
set -euo pipefail

need=()
if { [ "${1:-}" = --testpmd ] || [ "${1:-}" = --peers ]; } && ! command -v dpdk-testpmd >/dev/null 2>&1; then
	need+=(dpdk-dev librte-net-af-xdp23 librte-mempool-ring23)
fi
if [ "${1:-}" = --dev ]; then
	command -v clang >/dev/null 2>&1 || need+=(clang)
	command -v llvm-strip >/dev/null 2>&1 || need+=(llvm)
	[ -e /usr/include/bpf/bpf_helpers.h ] || need+=(libbpf-dev)
	command -v bpftool >/dev/null 2>&1 || [ -x /usr/sbin/bpftool ] || need+=(bpftool)
fi
made_policy=0
if [ "${1:-}" = --peers ] && ! command -v ovs-vswitchd >/dev/null 2>&1; then
	need+=(openvswitch-switch)
	# openvswitch-switch's postinst would start OVS system-wide; a
	# policy-rc.d (only if there is none) stops that.
	if [ "$(id -u)" = 0 ] && [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
		chmod +x /usr/sbin/policy-rc.d
		made_policy=1
	fi
fi
trap '[ $made_policy = 1 ] && rm -f /usr/sbin/policy-rc.d' EXIT
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v ethtool >/dev/null 2>&1 || need+=(ethtool)
optional=()
command -v tshark >/dev/null 2>&1 || optional+=(tshark)
command -v systemd-analyze >/dev/null 2>&1 || optional+=(systemd)
command -v ping >/dev/null 2>&1 || optional+=(iputils-ping)
command -v perf >/dev/null 2>&1 || optional+=(linux-perf)
command -v groff >/dev/null 2>&1 || optional+=(groff-base)
command -v iperf3 >/dev/null 2>&1 || optional+=(iperf3)

all=("${need[@]}" "${optional[@]}")
if [ ${#all[@]} -gt 0 ]; then
	if [ "$(id -u)" != 0 ]; then
		if [ ${#need[@]} -gt 0 ]; then
			echo "deps: missing ${all[*]}; run as root or install them: apt-get install ${all[*]}" >&2
			exit 1
		fi
		# Building needs neither; the tests that use them skip (and fail
		# under CI=true, where tests run as root).
		echo "deps: missing ${optional[*]}, which some tests and documented commands use (as root: apt-get install ${optional[*]})" >&2
	else
		echo "deps: installing ${all[*]}"
		# wireshark-common asks whether non-root users may capture;
		# answer no beforehand, so that the install never prompts.
		echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
		# iperf3 would ask whether to run its server as a system daemon: no.
		echo "iperf3 iperf3/start_daemon boolean false" | debconf-set-selections
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${all[@]}" >/dev/null
	fi
fi
go mod download
