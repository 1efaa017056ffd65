# cellar's build. The two commands a new user needs are "make run" and
# "make test"; everything they need is installed by scripts/deps.sh.

GO      ?= go
BIN     := bin/cellar
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
PKGS    := ./...
FUZZTIME ?= 30s
# make soak's chaos run (tests/chaos, docs/chaos.md): how long the nemesis
# injects faults, and the seed (a new one each run unless given; the run
# prints it so that a failure can be replayed with CHAOS_SEED=...).
CHAOS_DURATION ?= 30m
CHAOS_SEED     ?= $(shell date +%s)
CHAOS_TIMEOUT  ?= 3h

.PHONY: build test run bench soak lint fuzz deps proto clean

build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./ops/cmd/cellar

# run builds cellar and starts the embedded cluster (data under ./cellar-data).
run: build
	./$(BIN) demo

# cluster starts a multi-process cluster on loopback (3 Chubby replicas,
# 2 masters, 3 tablet servers, a gateway) under ./cellar-cluster; it keeps
# running until "make cluster-down". See docs/operations.md.
.PHONY: cluster cluster-down
cluster: build
	./$(BIN) cluster up

cluster-down: build
	./$(BIN) cluster down

# test runs the linters, then every test with the race detector. That
# includes tests/chaos's short seeded run (each fault kind twice, a few
# minutes; see docs/chaos.md). Long randomized, crash, chaos and fuzz runs
# are in "make soak".
test: deps lint
	$(GO) test -race -timeout 20m $(PKGS)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	cd tests/bench && $(GO) vet ./...

# bench runs cellar side by side with goleveldb and Pebble (and RocksDB's
# db_bench when installed), and its Chubby cell beside etcd, and prints
# ratios. See tests/bench/README.md.
bench:
	./scripts/deps.sh bench
	cd tests/bench && $(GO) run . $(BENCHFLAGS)

# soak runs the randomized model, crash and kill -9 tests for longer, the
# chaos suite for CHAOS_DURATION with random faults, and every fuzz target
# for FUZZTIME each.
soak:
	CELLAR_MODEL_OPS=300000 $(GO) test -count=3 -timeout 60m -run 'TestRandomizedAgainstModel' ./kv/tablet/
	$(GO) test -count=20 -timeout 60m -run 'TestCrashKeepsAcknowledgedWrites|TestKill9KeepsAcknowledgedWrites' ./kv/tablet/
	CELLAR_FSM_SEEDS=500 $(GO) test -timeout 60m -run 'TestRandomDeterminismAndSnapshots' ./coord/fsm/
	$(GO) test -count=20 -timeout 60m -run 'TestFailoverUnderLoad|TestLinearizableUnderLeaderKills|TestSessionExpiry|TestSequencerFencing' ./coord/cell/
	$(GO) test -count=5 -timeout 60m -run 'TestChubbyProcessesSurviveKill9' ./tests/
	$(GO) test -count=10 -timeout 60m -run 'TestKVClusterProcesses|TestFencingAfterSIGSTOP|TestTabletServerCrashRecovery|TestSplitsUnderLoad|TestFileGC' ./tests/
	CELLAR_BT_DIFF_OPS=20000 $(GO) test -count=3 -timeout 60m -run 'TestBigtableAgainstBttest' ./tests/
	for i in 1 2 3 4 5; do CELLAR_CHAOS_SEED=$$(od -An -N4 -tu4 /dev/urandom | tr -d ' ') $(GO) test -count=1 -v -timeout 60m -run 'TestTabletServerPartitionedFromChubby|TestChubbyLeaderFaults|TestChaosDiskFaults|TestChaosClockSkew' ./tests/ || exit 1; done
	CELLAR_CHAOS_DURATION=$(CHAOS_DURATION) CELLAR_CHAOS_SEED=$(CHAOS_SEED) $(GO) test -v -count=1 -timeout $(CHAOS_TIMEOUT) -run '^TestChaos$$' ./tests/chaos/
	$(MAKE) fuzz

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzRecordDecode$$' -fuzztime $(FUZZTIME) ./kv/commitlog/
	$(GO) test -run '^$$' -fuzz '^FuzzBlockDecode$$' -fuzztime $(FUZZTIME) ./kv/sstable/
	$(GO) test -run '^$$' -fuzz '^FuzzOpen$$' -fuzztime $(FUZZTIME) ./kv/sstable/
	$(GO) test -run '^$$' -fuzz '^FuzzConnection$$' -fuzztime $(FUZZTIME) ./pgwire/
	$(GO) test -run '^$$' -fuzz '^FuzzSCRAM$$' -fuzztime $(FUZZTIME) ./pgwire/
	$(GO) test -run '^$$' -fuzz '^FuzzRowFilter$$' -fuzztime $(FUZZTIME) ./kv/model/
	$(GO) test -run '^$$' -fuzz '^FuzzStatements$$' -fuzztime $(FUZZTIME) ./query/
	$(GO) test -run '^$$' -fuzz '^FuzzParseDateTime$$' -fuzztime $(FUZZTIME) ./query/pgtypes/
	$(GO) test -run '^$$' -fuzz '^FuzzJSON$$' -fuzztime $(FUZZTIME) ./query/pgtypes/
	$(GO) test -run '^$$' -fuzz '^FuzzParseInterval$$' -fuzztime $(FUZZTIME) ./query/pgtypes/
	# Its inputs are long command sequences: minimizing one for the default
	# minute would leave little of FUZZTIME for fuzzing.
	$(GO) test -run '^$$' -fuzz '^FuzzCommands$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s ./coord/fsm/

deps:
	./scripts/deps.sh

# proto regenerates the committed .pb.go files (protoc from Debian's
# protobuf-compiler, plugins from the module proxy).
proto:
	./scripts/proto.sh

clean:
	rm -rf bin
