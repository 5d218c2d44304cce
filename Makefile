# ecnswitch — build, test, demo. `make help` lists the targets.

GO       ?= go
BIN      := bin/ecnswitch
# make install: DESTDIR stages the files (for packaging); PREFIX, CONFDIR
# and UNITDIR say where they go.
DESTDIR  ?=
PREFIX   ?= /usr/local
BINDIR   ?= $(PREFIX)/bin
CONFDIR  ?= /etc/ecnswitch
UNITDIR  ?= /etc/systemd/system
MANDIR   ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR  ?= $(PREFIX)/share/zsh/site-functions
# The VCS revision `ecnswitch version` and every report print. The go
# command stamps it itself in a clone (unless GOFLAGS has -buildvcs=false);
# in a git worktree, whose .git is a file, it finds no repository. So make
# passes it with -X too, and internal/buildinfo prefers the go command's.
BUILDINFO := github.com/ecnswitch/ecnswitch/internal/buildinfo
VCS_REV   := $(shell git rev-parse HEAD 2>/dev/null)
VCS_TIME  := $(shell git log -1 --format=%cI 2>/dev/null)
VCS_DIRTY := $(shell git status --porcelain 2>/dev/null | head -c1)
LDFLAGS   := $(if $(VCS_REV),-X $(BUILDINFO).linkRevision=$(VCS_REV) -X $(BUILDINFO).linkTime=$(VCS_TIME)$(if $(VCS_DIRTY), -X $(BUILDINFO).linkModified=true))
# Each fuzz target in make test runs a count of executions, about 8 s on a
# 2-vCPU VM: a duration races Go 1.26's fuzzing coordinator, which can end
# a clean run with "context deadline exceeded" and no crasher
# (golang/go#75804, fixed in Go 1.27). FUZZTIME=60s or =1000000x sets every
# target's budget instead.
FUZZTIME ?=
# A bounded run spends its time fuzzing: each new input (and a crasher) is
# minimised for at most 10 runs, not the default minute. A crasher is saved
# in testdata/fuzz either way; minimise it afterwards with -fuzzminimizetime 60s.
FUZZMINIMIZE ?= 10x
fuzzflags = -fuzztime $(or $(FUZZTIME),$(1)) -fuzzminimizetime $(FUZZMINIMIZE)
# make soak's duration (not part of make test).
SOAK     ?= 10m
# Packages with concurrent code, run again under the race detector.
RACE_PKGS := ./internal/... ./buffer/... ./ports/... ./dataplane/... ./testbed/... ./capture/... ./telemetry/... ./node/... ./transport/... ./experiment/...

.PHONY: all build install uninstall test check unit race fuzz flake demo experiments bench bench-switch bench-tcp closed-loop deps help clean pgo

all: build

help:
	@echo "make demo     build and run the MQ-ECN static-flow demo on a 5-host testbed (root)"
	@echo "make experiments  rerun every experiment of the papers on a testbed; reports in docs/experiments/NAME (root, quiet machine, minutes)"
	@echo "make test     formatting, vet, unit and integration tests, race detector, bounded fuzzing"
	@echo "make flake    the timing-sensitive packages 20 times, with and without -race, beside two busy loops (root, about an hour)"
	@echo "make soak     $(SOAK) of mixed, malformed, flooded and oversize traffic, link flaps and API abuse against 'ecnswitch run' (root)"
	@echo "make bench    hot-path micro-benchmarks (pipeline, scheduler, parser, markers)"
	@echo "make build    build $(BIN)"
	@echo "make pgo      regenerate the profile the binary is optimised with ($(PGO)); PGO_EXTRA=run.pprof adds a real run's"
	@echo "make install  the binary to $(BINDIR), a two-port config to $(CONFDIR) (kept if present), the systemd unit to $(UNITDIR), the man page and shell completions (root)"
	@echo "make bench-switch  forwarding rate and RFC 2544 throughput vs testpmd, OVS afxdp and a Linux bridge, report in out/bench-switch (root)"
	@echo "make bench-tcp  real kernel TCP through ecnswitch, testpmd and a Linux bridge, report in out/bench-tcp.md (root)"
	@echo "make closed-loop  rerun the papers' static-flow experiment in virtual time; rewrites the table in docs/marking.md"

deps:
	@./scripts/deps.sh

build: deps
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/ecnswitch

# The binary; a two-port config and nothing else, packaging/ecnswitch.yaml
# (never over an existing one; examples/ecnswitch.yaml stays the reference
# of every key); the systemd unit with the paths filled in; the man page
# and the bash and zsh completions, both made from the command tree.
# systemd reloads when it runs here.
install: build
	install -D -m 0755 $(BIN) $(DESTDIR)$(BINDIR)/ecnswitch
	install -d -m 0755 $(DESTDIR)$(CONFDIR)
	@if [ -e $(DESTDIR)$(CONFDIR)/ecnswitch.yaml ]; then \
		echo "keeping $(DESTDIR)$(CONFDIR)/ecnswitch.yaml"; \
	else \
		install -m 0644 packaging/ecnswitch.yaml $(DESTDIR)$(CONFDIR)/ecnswitch.yaml; \
	fi
	install -D -m 0644 docs/ecnswitch.1 $(DESTDIR)$(MANDIR)/man1/ecnswitch.1
	install -d -m 0755 $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR)
	./$(BIN) completion bash > $(DESTDIR)$(BASHCOMPDIR)/ecnswitch
	./$(BIN) completion zsh > $(DESTDIR)$(ZSHCOMPDIR)/_ecnswitch
	install -d -m 0755 $(DESTDIR)$(UNITDIR)
	sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@CONFDIR@|$(CONFDIR)|g' packaging/ecnswitch.service > $(DESTDIR)$(UNITDIR)/ecnswitch.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/ecnswitch.service
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then systemctl daemon-reload; fi

# Removes what install put in place but the config, which is yours.
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/ecnswitch $(DESTDIR)$(UNITDIR)/ecnswitch.service $(DESTDIR)$(MANDIR)/man1/ecnswitch.1 \
		$(DESTDIR)$(BASHCOMPDIR)/ecnswitch $(DESTDIR)$(ZSHCOMPDIR)/_ecnswitch
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then systemctl daemon-reload; fi

# gofmt, go vet, and go.mod/go.sum exactly as `go mod tidy` leaves them.
check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run 'go mod tidy' and commit the result"; exit 1; }

unit:
	$(GO) test -count=1 -timeout 20m ./...

race:
	$(GO) test -count=1 -race -timeout 20m $(RACE_PKGS)

# Every parser's fuzz target, for a short bounded time each.
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' $(call fuzzflags,150000x) ./packet
	$(GO) test -run '^$$' -fuzz '^FuzzSetCE$$' $(call fuzzflags,150000x) ./packet
	$(GO) test -run '^$$' -fuzz '^FuzzTrim$$' $(call fuzzflags,120000x) ./packet
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' $(call fuzzflags,150000x) ./packet/intmd
	$(GO) test -run '^$$' -fuzz '^FuzzPush$$' $(call fuzzflags,100000x) ./packet/intmd
	$(GO) test -run '^$$' -fuzz '^FuzzAdmitRelease$$' $(call fuzzflags,130000x) ./buffer
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' $(call fuzzflags,30000x) ./config
	$(GO) test -run '^$$' -fuzz '^FuzzUnits$$' $(call fuzzflags,100000x) ./config
	$(GO) test -run '^$$' -fuzz '^FuzzSet$$' $(call fuzzflags,20000x) ./config
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeStart$$' $(call fuzzflags,45000x) ./capture
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeQueues$$' $(call fuzzflags,50000x) ./telemetry
	$(GO) test -run '^$$' -fuzz '^FuzzFindOption$$' $(call fuzzflags,400000x) ./timestamp
	$(GO) test -run '^$$' -fuzz '^FuzzParseCDF$$' $(call fuzzflags,50000x) ./experiment
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' $(call fuzzflags,50000x) ./transport/udp
	$(GO) test -run '^$$' -fuzz '^FuzzParseControl$$' $(call fuzzflags,50000x) ./transport/udp
	$(GO) test -run '^$$' -fuzz '^FuzzProgram$$' $(call fuzzflags,20000x) ./loadgen/xdpsink
	$(GO) test -run '^$$' -fuzz '^FuzzParseMix$$' $(call fuzzflags,60000x) ./loadgen
	$(GO) test -run '^$$' -fuzz '^FuzzCPUList$$' $(call fuzzflags,60000x) ./doctor

test: deps check unit race fuzz

# The hunt for flaky tests (scripts/flake.sh): COUNT runs of every
# timing-sensitive package, without and with -race, under LOAD busy loops.
flake: deps
	@if [ "$$(id -u)" != 0 ]; then echo "the flake hunt runs the privileged tests: run it as root"; exit 1; fi
	scripts/flake.sh

# The soak test (cmd/ecnswitch/soak_linux_test.go, build tag soak): the
# built binary on a three-host testbed for $(SOAK); see the README.
soak: build
	@if [ "$$(id -u)" != 0 ]; then echo "the soak test creates network namespaces: run it as root"; exit 1; fi
	$(GO) vet -tags soak ./cmd/ecnswitch
	ECNSWITCH_BIN=$(CURDIR)/$(BIN) $(GO) test -tags soak -count=1 -v -timeout 60m -run '^TestSoak$$' ./cmd/ecnswitch -soak.duration $(SOAK)

# The binary is built with profile-guided optimisation from PGO (go build
# uses a main package's default.pgo); the benchmarks get the same profile,
# so that they measure the code as the binary runs it.
PGO      := cmd/ecnswitch/default.pgo
# make pgo merges these CPU profiles (ecnswitch run --cpuprofile under real
# traffic) into the new default.pgo, with the pipeline benchmark's.
PGO_EXTRA ?=

bench: deps
	$(GO) test -pgo=$(CURDIR)/$(PGO) -run '^$$' -bench . -benchmem -count 1 ./packet ./scheduler ./buffer ./marking ./dataplane

# Regenerates the PGO profile from the 64 B and 1500 B pipeline benchmark
# (and PGO_EXTRA); commit the result. See README, "Profile-guided optimisation".
pgo: deps
	@mkdir -p out
	$(GO) test -run '^$$' -bench Pipeline -benchtime 10000000x -cpuprofile $(CURDIR)/out/pipeline.pprof -o $(CURDIR)/out/dataplane.test ./dataplane
	$(GO) tool pprof -proto $(CURDIR)/out/pipeline.pprof $(PGO_EXTRA) > $(PGO).new
	mv $(PGO).new $(PGO)

# nice: the generator, the switch worker and the sink share two CPUs, and
# stalls of the worker otherwise halve some trials.
# deps.sh --peers installs dpdk-testpmd and Open vSwitch for their rows.
bench-switch: build
	@if [ "$$(id -u)" != 0 ]; then echo "bench-switch creates network namespaces: run it as root"; exit 1; fi
	scripts/deps.sh --peers
	nice -n -10 ./$(BIN) bench switch --out out/bench-switch

# Real kernel TCP through ecnswitch, ecnswitch with RED, DPDK testpmd and a
# Linux bridge, devices taking turns (about 3 minutes); deps.sh --testpmd
# installs dpdk-testpmd for its row.
bench-tcp: build
	@if [ "$$(id -u)" != 0 ]; then echo "bench-tcp creates network namespaces: run it as root"; exit 1; fi
	scripts/deps.sh --testpmd
	mkdir -p out
	./$(BIN) bench tcp --devices ecnswitch,ecnswitch-red,testpmd,bridge | tee out/bench-tcp.md

closed-loop:
	$(GO) run ./cmd/ecnswitch closedloop table

demo: build
	@if [ "$$(id -u)" != 0 ]; then echo "the demo creates network namespaces: run it as root (sudo make demo)"; exit 1; fi
	./$(BIN) demo

# Every experiment of `ecnswitch experiment list`, one after the other, each
# report into docs/experiments/NAME. Not part of `make test`: it takes
# minutes and wants a quiet machine (the reports flag runs whose bottleneck
# port was busy less than 95% of the time).
EXPERIMENTS ?= $(shell ./$(BIN) experiment list 2>/dev/null | awk 'NF && $$0 !~ /^ / {print $$1}')
experiments: build
	@if [ "$$(id -u)" != 0 ]; then echo "experiments create network namespaces: run them as root"; exit 1; fi
	@for e in $(EXPERIMENTS); do ./$(BIN) experiment --out docs/experiments/$$e $$e || exit 1; done
	./$(BIN) experiment summary --into docs/experiments.md $(addprefix docs/experiments/,$(EXPERIMENTS))

clean:
	rm -rf bin out
