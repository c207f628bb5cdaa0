# bulwark — build, test and demo. Needs only Go (see README).
GO        ?= go
BIN       := bin
PLUGINS   := $(BIN)/plugins
GOFLAGS_T ?= -race -count=1 -timeout 30m

# Code generators, pinned. protoc comes from Debian (protobuf-compiler 3.21.12).
PROTOC_GEN_GO      := google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
PROTOC_GEN_GO_GRPC := google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
TOOLS := $(CURDIR)/.tools

MODULES := sdk core backends cmd/bulwark plugins/mock plugins/local plugins/aws testproviders tools/bench

.PHONY: build build-demo build-testproviders test test-aws demo generate check-generate tools vet bench bench-guard bench-latency bench-modules bench-terraform bench-opentofu test-crash-full clean \
	check-tidy tidy set-version install check-install file-proxy dist cross cross-build

# -buildvcs=auto: stamp the checkout's commit into the binaries (bulwark
# version prints it) even where GOFLAGS says -buildvcs=false. The providers
# are built from their cmd/bulwark-provider-NAME packages, the ones
# `go install` installs under the name the plugin lookup wants.
#
# -trimpath on every plain build and vet, as `go install` in make
# check-install (tools/release/install_test.go) and the release archives
# build: the flag is part of every package's build-cache key, the standard
# library's included, so with it the run's builds and the install test share
# compiled packages. Without it check-install recompiled the standard library
# and every dependency, minutes on a cold build cache.
TRIMPATH := -trimpath
GOBUILD  := $(GO) build $(TRIMPATH) -buildvcs=auto

# The version bulwark version reports for a build from a checkout: git
# describe of HEAD (the nearest cmd/bulwark/vX.Y.Z tag, the prefix dropped,
# else the abbreviated commit), -dirty with uncommitted changes; and the
# commit, which Go does not stamp in a git worktree. Without git, or outside
# a clone, both are empty and bulwark falls back to its build info (devel, or
# the module version). make dist passes its own (tools/release/dist.sh).
GIT_DESCRIBE    := $(patsubst cmd/bulwark/%,%,$(shell git describe --tags --always --dirty --match 'cmd/bulwark/v*' 2>/dev/null))
GIT_COMMIT      := $(shell git rev-parse HEAD 2>/dev/null)
BULWARK_LDFLAGS := $(if $(GIT_DESCRIBE),-X main.version=$(GIT_DESCRIBE)) $(if $(GIT_COMMIT),-X main.commit=$(GIT_COMMIT))

build: build-demo
	$(GOBUILD) -o $(PLUGINS)/bulwark-provider-aws ./plugins/aws/cmd/bulwark-provider-aws

# What the demo needs: the CLI, bulwark-graphviz beside it (graph --format
# svg and the web view's graph page run it: core/graphsvg/dotlayout says
# why it is a program of its own) and the mock and local providers (the
# aws provider's SDK takes minutes to compile on a fresh machine).
build-demo:
	@mkdir -p $(PLUGINS)
	$(GOBUILD) -ldflags "$(BULWARK_LDFLAGS)" -o $(BIN)/bulwark ./cmd/bulwark
	$(GOBUILD) -o $(BIN)/bulwark-graphviz ./cmd/bulwark/cmd/bulwark-graphviz
	$(GOBUILD) -o $(PLUGINS)/bulwark-provider-mock ./plugins/mock/cmd/bulwark-provider-mock
	$(GOBUILD) -o $(PLUGINS)/bulwark-provider-local ./plugins/local/cmd/bulwark-provider-local

# The Terraform test providers (testproviders/README.md) as a Terraform
# filesystem mirror, unpacked layout, in bin/testproviders:
# HOST/bulwark/TYPE/VERSION/OS_ARCH/terraform-provider-TYPE_vVERSION. Point
# Terraform at it with provider_installation { filesystem_mirror { path =
# ".../bin/testproviders" } } in a CLI configuration (TF_CLI_CONFIG_FILE).
TESTPROVIDERS         := $(BIN)/testproviders
TESTPROVIDERS_VERSION ?= 0.1.0
TESTPROVIDERS_PLATFORM = $(shell $(GO) env GOOS)_$(shell $(GO) env GOARCH)
build-testproviders:
	@set -e; for p in fwtest sdktest; do \
		d=$(TESTPROVIDERS)/registry.terraform.io/bulwark/$$p/$(TESTPROVIDERS_VERSION)/$(TESTPROVIDERS_PLATFORM); \
		mkdir -p $$d; \
		echo "$$d/terraform-provider-$${p}_v$(TESTPROVIDERS_VERSION)"; \
		$(GOBUILD) -ldflags "-X main.version=$(TESTPROVIDERS_VERSION)" -o $$d/terraform-provider-$${p}_v$(TESTPROVIDERS_VERSION) ./testproviders/cmd/terraform-provider-$$p; \
	done

# bulwark and bulwark-graphviz into $(PREFIX)/bin and every provider into $(PREFIX)/bin/plugins,
# the folder beside the executable that the plugin lookup searches last
# (after --plugin-dir, $$BULWARK_PLUGIN_DIR and ./bin/plugins).
# make install PREFIX=$$HOME/.local puts them in your home; DESTDIR stages.
PREFIX  ?= /usr/local
DESTDIR ?=
install: build
	install -d $(DESTDIR)$(PREFIX)/bin/plugins
	install -m 0755 $(BIN)/bulwark $(BIN)/bulwark-graphviz $(DESTDIR)$(PREFIX)/bin/
	install -m 0755 $(PLUGINS)/bulwark-provider-mock $(PLUGINS)/bulwark-provider-local \
		$(PLUGINS)/bulwark-provider-aws $(DESTDIR)$(PREFIX)/bin/plugins/

# Every module's tests (race detector on), the end-to-end scripts included.
# They run the real binaries make build-demo writes to bin/, named by
# BULWARK_TEST_BIN_DIR, so one CI run builds each program once (install,
# bench-guard and demo find bin/ up to date; without the variable, as with
# a plain go test, cmd/bulwark's tests build them once per run). The race
# detector covers the tests' own processes; the bulwark the end-to-end
# scripts, the crash harness and the terminal tests exec is that plain
# build, since -race made each of its commands 5-7x
# slower and the scripts most of the suite's time. A few scripts
# (raceScripts in cmd/bulwark/script_test.go) run the race-built test binary
# as bulwark instead, so the CLI's concurrent glue keeps race coverage end
# to end. The postgres backend's tests use
# $BULWARK_TEST_POSTGRES_URL when set (.ci/postgres.sh start, then
# eval "$(.ci/postgres.sh env)"), else start a throwaway server from the
# installed PostgreSQL, else skip saying how to install it (CI=true fails).
#
# cmd/bulwark's tests (the longest: most of their time is spent waiting on
# plugin processes, fsyncs and the crash harness's children) run beside the
# other modules', as two processes: in one (LONG_SPLIT) every test named
# ...OnPostgres or ...OnS3 (the end-to-end scripts, the crash harnesses
# and the browser test on those backends), TestPostgresScripts and
# TestScriptsS3 (testdata/postgres's and testdata/s3's scripts) and
# TestCrashMigrate (a migration's crash harness, three of its four pairs
# of places on PostgreSQL or S3), which even the two out; the rest of
# cmd/bulwark in the other; each test binary runs its own -parallel share.
# Every lane starts once the packages the tests share are compiled
# (PREBUILD_PKGS, below). Their output is
# held and printed whole when they end, so the suite takes about as long as
# the longest of the three rather than the sum (docs/development.md, "CI
# time"). Every module runs to its end, and the target fails if any failed.
# Each module's line says when it started, and each of the three run beside
# the others when it ended, in seconds since the target started: a CI log
# shows its longest path.
#
# -vet=off (TEST_VET): go test would run a subset of go vet's checks on
# every package before testing it; make vet, this target's prerequisite,
# has just run all of them on every module, tests included.
# GORACE=atexit_sleep_ms=0 (unless GORACE is set): a binary built with
# -race sleeps a second before it exits, by default. Every test binary of
# make test is, and so are the children some tests start from it (the
# bulwark of cmd/bulwark's raceScripts, the strict provider, helper
# processes): about 60 test binaries and 50 script commands, a second of
# nothing each. The testing package fails a test that raced when the test
# ends, and a race-built program exits 66 once it reported a race, sleep or
# not (sdk/providertest sets the same for its race-built plugins).
test test-crash-full test-aws: export GORACE ?= atexit_sleep_ms=0
# GOFLAGS=-ldflags=-w (unless GOFLAGS is set): no DWARF in what make test
# links, the test binaries and the programs tests build with go build (the
# plugins, the Terraform test providers, fakes3, the race-built plugins of
# sdk/providertest; build-demo's, its prerequisite, too). Nothing reads it:
# a panic's trace and a race report come from the symbol table, which -w
# keeps. A link is most of a go build whose packages are cached, and make
# test links about 60 test binaries and a few dozen programs: bin/bulwark
# takes 3.7 CPU-s to build without DWARF against 6.0 with it, cmd/bulwark's
# race-built test binary 5.1 against 7.3.
# A -ldflags on a command's own line (version_test's) wins over GOFLAGS.
test test-crash-full test-aws: export GOFLAGS ?= -ldflags=-w
LONG_MODULE := cmd/bulwark
# SIDE_MODULES run beside the others too, one after the other: with
# cmd/bulwark split in two, the modules run one after another had become
# the longest path (core, backends and plugins/aws, ~460 s of 590), and
# plugins/aws's end-to-end tests spend most of their time waiting on its
# emulators and plugins. Once they linked each program once, plugins/aws
# ended at 84 s of a 927 s make test, so backends (about 260 s, much of it
# waiting on PostgreSQL and the S3 emulator) follows it there.
SIDE_MODULES := plugins/aws backends
LONG_SPLIT  := ^(Test[A-Za-z0-9]*On(Postgres|S3)|TestPostgresScripts|TestScriptsS3|TestCrashMigrate)$$
TEST_VET    := -vet=off
# Every package the tests import (PREBUILD_PKGS: the packages of every
# module of the workspace and all they and their tests import, but the
# standard library's, the programs and the test variants themselves),
# race-built in one go build before any lane starts. Lanes started at once
# compile the same graph side by side (cmd/bulwark's two halves all of
# it, the other lanes sdk, core, the AWS SDK), the build cache serving
# none until one has finished. With an empty cache, a fresh clone's four
# lanes compiling their first test binaries took 513 s and 1,008 CPU-s,
# against 315 s and 605 CPU-s compiled once first; with a warm one the
# go build finds everything built (docs/development.md, "CI time").
PREBUILD_PKGS := {{if and (not .ForTest) (not .Standard) (ne .Name "main") (or .GoFiles .CgoFiles)}}{{.ImportPath}}{{end}}
test: vet build-demo
	@log=$$(mktemp); log2=$$(mktemp); log3=$$(mktemp); fail=0; t0=$$(date +%s); \
	at() { echo "$$(( $$(date +%s) - t0 ))s"; }; \
	echo "== every package the tests import, compiled once before they start (at $$(at))"; \
	$(GO) build $(filter -race,$(GOFLAGS_T)) $$($(GO) list -deps -test -f '$(PREBUILD_PKGS)' $(VET_PKGS)) || fail=1; \
	( rc=0; for m in $(SIDE_MODULES); do echo "== $$m (at $$(at))"; (cd $$m && BULWARK_TEST_BIN_DIR=$(CURDIR)/$(BIN) $(GO) test $(GOFLAGS_T) $(TEST_VET) ./...) || rc=1; done; echo "(ended at $$(at))"; exit $$rc ) > $$log3 2>&1 & side=$$!; \
	( cd $(LONG_MODULE) && BULWARK_TEST_BIN_DIR=$(CURDIR)/$(BIN) $(GO) test $(GOFLAGS_T) $(TEST_VET) -skip '$(LONG_SPLIT)' ./...; rc=$$?; echo "(ended at $$(at))"; exit $$rc ) > $$log 2>&1 & long=$$!; \
	( cd $(LONG_MODULE) && BULWARK_TEST_BIN_DIR=$(CURDIR)/$(BIN) $(GO) test $(GOFLAGS_T) $(TEST_VET) -run '$(LONG_SPLIT)' .; rc=$$?; echo "(ended at $$(at))"; exit $$rc ) > $$log2 2>&1 & split=$$!; \
	for m in $(filter-out $(LONG_MODULE) $(SIDE_MODULES),$(MODULES)); do echo "== $$m (at $$(at))"; (cd $$m && BULWARK_TEST_BIN_DIR=$(CURDIR)/$(BIN) $(GO) test $(GOFLAGS_T) $(TEST_VET) ./...) || fail=1; done; \
	echo "== core/graphsvg/dotlayout without -race (its tests say why) (at $$(at))"; \
	(cd core && $(GO) test -count=1 $(TEST_VET) ./graphsvg/dotlayout/) || fail=1; \
	echo "== examples/provider-hello (out of tree: built without the workspace) (at $$(at))"; \
	(cd examples/provider-hello && GOWORK=off $(GO) vet ./... && GOWORK=off $(GO) test $(GOFLAGS_T) $(TEST_VET) ./...) || fail=1; \
	echo "== tools/release (its own module, outside the workspace) (at $$(at))"; \
	(cd tools/release && GOWORK=off $(GO) test $(GOFLAGS_T) $(TEST_VET) ./...) || fail=1; \
	echo "(the modules run one after another ended at $$(at))"; \
	echo "== $(SIDE_MODULES) (run beside the others, one after the other)"; \
	wait $$side || fail=1; cat $$log3; \
	echo "== $(LONG_MODULE): the tests on PostgreSQL and S3 (run beside the others)"; \
	wait $$split || fail=1; cat $$log2; \
	echo "== $(LONG_MODULE): the rest (run beside the others)"; \
	wait $$long || fail=1; cat $$log; rm -f $$log $$log2 $$log3; exit $$fail

# The crash harnesses (cmd/bulwark's TestCrash*) killing at every boundary
# instead of the sample make test takes (docs/ci.md): on a 2-core machine
# the file backend's harness alone then takes about 16 CPU-minutes, and the
# PostgreSQL and S3 ones (they need the server and the emulator as make test
# does, or skip) much longer. BULWARK_CRASH_SEED=S replays a logged seed.
test-crash-full: build-demo
	cd $(LONG_MODULE) && BULWARK_CRASH_FULL=1 BULWARK_TEST_BIN_DIR=$(CURDIR)/$(BIN) \
		$(GO) test $(GOFLAGS_T) -timeout 180m -run '^TestCrash' .

# The aws provider's tests against the emulators (.ci/emulators.sh: gofakes3
# and dynalite on loopback). Starts them unless they already run, runs
# plugins/aws's tests with them, and stops what it started, pass or fail.
# (make test runs the same tests when BULWARK_TEST_S3_ENDPOINT is set, as
# .ci/run does; without the emulators they skip, saying how to start them.)
test-aws:
	@if .ci/emulators.sh status >/dev/null 2>&1; then started=; else .ci/emulators.sh start || exit 1; started=1; fi; \
	eval "$$(.ci/emulators.sh env)" && (cd plugins/aws && $(GO) test $(GOFLAGS_T) ./...); code=$$?; \
	if [ -n "$$started" ]; then .ci/emulators.sh stop; fi; exit $$code

# gofmt, then one go vet over every module of the workspace (VET_PKGS): one
# invocation loads the packages once and keeps both cores busy to its end;
# one per module took 30 CPU-seconds and 19 s against 27 and 14 s, every
# package changed, and 8.6 and 18 s against 2.0 and 3 s, nothing changed.
VET_PKGS := $(addprefix ./,$(addsuffix /...,$(MODULES)))
vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' | grep -v '\.pb\.go$$'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go' | grep -v '\.pb\.go$$'); exit 1; }
	$(GO) vet $(TRIMPATH) $(VET_PKGS)
	cd tools/release && GOWORK=off $(GO) vet $(TRIMPATH) ./...

# Vet every module, tests included, for every platform bulwark ships for
# beyond Linux (CROSS_PLATFORMS): what CI runs to show that the
# platform-specific pieces (core/nofollow, core/storage/filestore/lock,
# core/failpoint, core/pidcheck, the local provider's lock) compile there. go vet compiles,
# with the real compiler for that GOOS/GOARCH, every package another one
# imports (it needs their export data) and type-checks the rest: the main
# packages and every test file. What it leaves out is the compile of the
# four main packages and the link of the eight executables, which no
# platform-specific code of ours changes: with every bulwark package
# changed, 86-90 CPU-seconds and 115-118 s before, 60-63 and 71-72 s after
# (docs/development.md, "CI time"). One go vet over every module, as make
# vet.
# Nothing checked here runs: no such machine runs the tests
# (docs/platforms.md). make cross-build builds the binaries.
CROSS_PLATFORMS ?= windows/amd64 darwin/arm64
cross:
	@set -e; for pl in $(CROSS_PLATFORMS); do \
		os=$${pl%/*}; arch=$${pl#*/}; \
		echo "== $$pl: vet"; \
		GOOS=$$os GOARCH=$$arch $(GO) vet $(TRIMPATH) $(VET_PKGS); \
		(cd tools/release && GOWORK=off GOOS=$$os GOARCH=$$arch $(GO) vet $(TRIMPATH) ./...); \
	done

# bulwark, bulwark-graphviz and the three providers built for each of CROSS_PLATFORMS, into
# bin/cross/OS_ARCH/ (what make cross did before it only vetted; make dist
# builds the release archives the same way).
cross-build:
	@set -e; for pl in $(CROSS_PLATFORMS); do \
		os=$${pl%/*}; arch=$${pl#*/}; exe=; [ $$os = windows ] && exe=.exe; \
		d=$(BIN)/cross/$${os}_$${arch}; mkdir -p $$d/plugins; \
		echo "== $$pl: build"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GOBUILD) -o $$d/bulwark$$exe ./cmd/bulwark; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GOBUILD) -o $$d/bulwark-graphviz$$exe ./cmd/bulwark/cmd/bulwark-graphviz; \
		for p in mock local aws; do \
			CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GOBUILD) -o $$d/plugins/bulwark-provider-$$p$$exe ./plugins/$$p/cmd/bulwark-provider-$$p; \
		done; \
	done

demo: build-demo
	@./examples/demo.sh

# The Go benchmarks, then the harness (tools/bench, a module of its own in
# the workspace: a tool, not part of core): the real binaries over generated
# stacks on the mock provider, N = 100, 1,000 and 10,000, flat and chain, the
# floor measured in the same run, OpenTofu or Terraform beside it when on
# PATH. Writes bench/results-DATE.md and bench/latest.md.
# BENCHFLAGS=-quick for N = 1,000 only; see `go run ./tools/bench/cmd/bulwark-bench -h`.
BENCHFLAGS ?=
BENCH := $(GO) run ./tools/bench/cmd/bulwark-bench -root . -bulwark $(BIN)/bulwark
bench: build-demo
	@set -e; for m in core; do (cd $$m && $(GO) test -run '^$$' -bench . -benchmem ./...); done
	$(BENCH) $(BENCHFLAGS)

# The regression guard CI runs: N = 1,000, flat and chain; fails when a
# figure is further from the floor than bench/guard.json allows (see
# bench/README.md for how to tighten the margins).
bench-guard: build-demo
	$(BENCH) -guard bench/guard.json

# The latency rows (issue 20): apply and teardown of flat 200 and 10 layers
# x 20 on the mock with latency_ms 50 and 200, --parallelism 10 and 50, on the
# batching mock and on the mock without its batch calls
# (BULWARK_MOCK_BATCH=off), each against the time an ideal engine would
# take (bench/README.md, "Latency rows"), OpenTofu and Terraform beside when
# on PATH; then a failed apply of flat 200 at latency_ms 50, --parallelism
# 10, rolled back (LATENCYFLAGS=-rollback-latency 0 leaves it out); then
# flat 1,000 on the mock with rate_limit: 50. Writes
# bench/latency-DATE.md. LATENCYFLAGS=-count 3 for medians;
# LATENCYFLAGS=-rate-limit 0 leaves the rate-limited rows out (a mock
# without the rate_limit key refuses that spec).
LATENCYFLAGS ?=
bench-latency: build-demo
	$(BENCH) -latency $(LATENCYFLAGS)

# OpenTofu, for the benchmarks to run beside bulwark (they look for `tofu`
# on PATH): `go install` refuses its module (its go.mod has a replace
# directive), so this builds it from the Go module proxy's copy of its
# source into .tools/tofu, as its release does (version.dev=no). About 6
# minutes on 2 cores. Then: PATH=$(TOOLS):$$PATH make bench-latency.
OPENTOFU_VERSION ?= v1.12.6
bench-opentofu:
	@mkdir -p $(TOOLS)
	@src=$$(mktemp -d) && trap 'rm -rf "$$src"' EXIT && \
	dir=$$(cd "$$src" && GOWORK=off $(GO) mod download -json github.com/opentofu/opentofu@$(OPENTOFU_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p') && \
	test -n "$$dir" && cp -R "$$dir"/. "$$src/tofu" && chmod -R u+w "$$src/tofu" && \
	cd "$$src/tofu" && GOWORK=off GOFLAGS=-mod=mod $(GO) build -trimpath \
		-ldflags "-X github.com/opentofu/opentofu/version.dev=no" -o $(TOOLS)/tofu ./cmd/tofu && \
	$(TOOLS)/tofu version

# The module rows (issue 22): 10,000 resources written as 100 calls of a
# 100-resource module beside the same 10,000 written flat, each command's
# modules ÷ flat ratio against the 1.5× bound on validate, plan and apply.
# Writes bench/modules-DATE.md. MODULESFLAGS=-sizes 1000 for a quick look.
MODULESFLAGS ?= -count 3
bench-modules: build-demo
	$(BENCH) -modules -compare none $(MODULESFLAGS)

# The Terraform-protocol rows (issue 21): a flat stack of 1,000 items of each
# Terraform test provider (testproviders: fwtest, sdktest), bulwark beside
# Terraform (when on PATH) on the same binary from bin/testproviders, and
# the same 1,000 on the mock (bulwark's own protocol), interleaved: apply,
# no-op plan, no-op apply, teardown. Writes bench/terraform-DATE.md.
# TFBENCHFLAGS=-count 3 for medians; TFBENCHFLAGS=-tf-env=TF_LOG_SDK=off
# turns the providers' trace logging off for both tools.
TFBENCHFLAGS ?=
bench-terraform: build-demo build-testproviders
	$(BENCH) -terraform-protocol -tf-mirror $(TESTPROVIDERS) $(TFBENCHFLAGS)

tools:
	@command -v protoc >/dev/null || { echo "protoc not found: apt-get install -y protobuf-compiler libprotobuf-dev" >&2; exit 1; }
	@mkdir -p $(TOOLS)
	GOBIN=$(TOOLS) $(GO) install $(PROTOC_GEN_GO)
	GOBIN=$(TOOLS) $(GO) install $(PROTOC_GEN_GO_GRPC)

generate: tools
	cd sdk && PATH=$(TOOLS):$$PATH protoc -I proto/providerv1 \
		--go_out=. --go_opt=module=github.com/bulwark-iac/bulwark/sdk \
		--go-grpc_out=. --go-grpc_opt=module=github.com/bulwark-iac/bulwark/sdk \
		proto/providerv1/provider.proto
	cd core && PATH=$(TOOLS):$$PATH protoc -I pluginhost/tfplugin/internal \
		--go_out=. --go_opt=module=github.com/bulwark-iac/bulwark/core \
		--go-grpc_out=. --go-grpc_opt=module=github.com/bulwark-iac/bulwark/core \
		tfplugin5/tfplugin5.proto tfplugin6/tfplugin6.proto

# Fails when the committed generated code differs from what `make generate`
# makes: bulwark's own protocol (sdk/proto) and the part of Terraform's
# plugin protocols 5 and 6 the host speaks (core/pluginhost/tfplugin).
check-generate: generate
	@git diff --exit-code -- sdk/proto core/pluginhost/tfplugin/internal || { echo "generated code is stale: run make generate and commit" >&2; exit 1; }
	@test -z "$$(git ls-files --others --exclude-standard -- sdk/proto core/pluginhost/tfplugin/internal)" || { echo "generated code is not committed: run make generate and commit" >&2; exit 1; }

# The modules as a proxy serves them (tools/release, its own module outside
# the workspace). check-tidy fails when a published go.mod has a replace
# directive, when the modules require each other at different versions, or
# when `go mod tidy` would change any go.mod or go.sum. tidy ignores go.work,
# so each module is tidied on a copy of its go.mod (-modfile) that replaces
# the siblings with their folders, as the workspace does. Offline once the
# module cache holds what tidy reads: GOPROXY=off make check-tidy.
RELEASE_TOOL = cd tools/release && GOWORK=off $(GO) run ./cmd/bulwark-release -root ../..
check-tidy:
	$(RELEASE_TOOL) check

# `go install …@VERSION` from a module proxy in a folder, no network
# (tools/release/install_test.go): the working tree's modules zipped at the
# version they require each other at, bulwark into a temporary GOBIN and the
# mock and local providers into GOBIN/plugins (CHECK_INSTALL_AWS=1 adds
# aws), then the installed bulwark runs version, providers and an apply.
# check-tidy first: its tidy of each module on its own downloads what that
# module's own build list needs (it can differ from the workspace's), so the
# install then finds every module in the module cache, offline.
CHECK_INSTALL_AWS ?=
check-install: check-tidy
	cd tools/release && BULWARK_TEST_INSTALL=1 BULWARK_TEST_INSTALL_AWS=$(CHECK_INSTALL_AWS) GOWORK=off \
		$(GO) test -count=1 -v -run '^TestInstallFromFileProxy$$' .

# The same proxy, to try by hand: make file-proxy DIR=/tmp/proxy, then (a
# fresh module cache, so no test version of bulwark stays in yours; the
# checksum database off, since it needs the network)
#   GOPROXY=file:///tmp/proxy,file://$$(go env GOMODCACHE)/cache/download GOMODCACHE=$$(mktemp -d) \
#   GOSUMDB=off GOFLAGS="-mod=mod -modcacherw" GOWORK=off go install …@v0.1.0
DIR ?= $(CURDIR)/bin/proxy
file-proxy:
	$(RELEASE_TOOL) proxy $(abspath $(DIR))

# Release archives in dist/: bulwark_VERSION_OS_ARCH.tar.gz for linux and
# darwin on amd64 and arm64 (bulwark and plugins/bulwark-provider-*, as the
# lookup wants them) and SHA256SUMS. VERSION defaults to the version the
# modules require each other at (make dist VERSION=v0.2.0-rc.1 names
# another). tools/release/dist.sh says why not GoReleaser.
MODULES_VERSION := $(shell sed -n 's,^[[:space:]]*github.com/bulwark-iac/bulwark/sdk \(v[^ ]*\)$$,\1,p' core/go.mod)
dist:
	tools/release/dist.sh $(or $(VERSION),$(MODULES_VERSION))

# Runs go mod tidy on every module that way and writes the result.
tidy:
	$(RELEASE_TOOL) tidy

# Before tagging a release: every module requires its siblings at VERSION
# and go.work replaces that version with the folders.
set-version:
	@test -n "$(VERSION)" || { echo "usage: make set-version VERSION=v0.2.0" >&2; exit 1; }
	$(RELEASE_TOOL) set-version $(VERSION)

clean:
	rm -rf $(BIN) $(TOOLS) dist
