#!/usr/bin/env bash
# Installs the Debian packages ecnswitch's build, tests and testbed need,
# when they are missing, and the Go modules. Idempotent; quiet when
# everything is present; never asks a question (CI has no terminal).
#
#   iproute2, ethtool  the testbed and the tests (ip, ethtool)
#   tshark             the capture tests' cross-check of the files ecnswitch writes
#   systemd            systemd-analyze, which checks the unit make install installs
#
# With --testpmd (make bench-tcp, make bench-switch), also DPDK's testpmd and
# its AF_XDP driver, the peer bench tcp and bench switch compare ecnswitch with.
set -euo pipefail

need=()
if [ "${1:-}" = --testpmd ] && ! command -v dpdk-testpmd >/dev/null 2>&1; then
	need+=(dpdk-dev librte-net-af-xdp23 librte-mempool-ring23)
fi
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v ethtool >/dev/null 2>&1 || need+=(ethtool)
optional=()
command -v tshark >/dev/null 2>&1 || optional+=(tshark)
command -v systemd-analyze >/dev/null 2>&1 || optional+=(systemd)

all=("${need[@]}" "${optional[@]}")
if [ ${#all[@]} -gt 0 ]; then
	if [ "$(id -u)" != 0 ]; then
		if [ ${#need[@]} -gt 0 ]; then
			echo "deps: missing ${all[*]}; run as root or install them: apt-get install ${all[*]}" >&2
			exit 1
		fi
		# Building needs neither; the tests that use them skip (and fail
		# under CI=true, where tests run as root).
		echo "deps: missing ${optional[*]}, which some tests use (as root: apt-get install ${optional[*]})" >&2
	else
		echo "deps: installing ${all[*]}"
		# wireshark-common asks whether non-root users may capture;
		# answer no beforehand, so that the install never prompts.
		echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${all[@]}" >/dev/null
	fi
fi
go mod download
