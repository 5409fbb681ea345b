# scx_tt entry points (docs/vm-harness.md describes the VM side).
#   make demo           build, then run scx_tt on schedules/demo.json for 10 s and print the
#                       per-slot timeline and summary: directly on a sched_ext host, else in a VM;
#                       then its HTML report (target/demo/report.html, docs/report.md)
#   make report-demo    the demo's report and its screenshot in headless chromium
#   make test           unit and integration tests, the benchmarks' build, the reduced cluster
#                       test (1 node, 20 pods), then make test-vm-all (what .ci/run calls)
#   make test-cluster   the full cluster test: a real etcd, kube-apiserver and kube-scheduler
#                       with the ScxTT plugin, 5 scx_tt --simulated-node nodes, 200 pods
#   make test-vm-all    the VM tests on the default kernel, then the core set on the rt, lts and
#                       lts-rt kernels, which are fetched and built beside them (issue 32)
#   make test-vm        the VM tests on the default kernel only, then their summary table
#                       (target/vm/summary.tsv: boots, crashes, hangs, re-measurements, verdict,
#                       wall time per test)
#   make test-vm-loaded the same with `stress-ng --cpu 2` running beside it (scripts/with-load.sh)
#   make test-kernels   smoke and the core set on the rt, lts and lts-rt kernels (KERNELS=...)
#   make test-kernel KERNEL=NAME  every VM test on one kernel (default, rt, lts, lts-rt)
#   make bench          the plan, planner and energy benchmarks (no VM)
#   make bench-lateness slot-start lateness: BPF slot timer vs a userspace timer, in one VM
#   make bench-demos    window-start lateness on a DEmOS config: scx_tt vs a DEmOS-like switcher, in one VM
#   make install        the built binary, systemd unit, defaults file and docs (DESTDIR, PREFIX;
#                       docs/service.md); run `make build` first
#   make deb            a Debian package with cargo-deb (target/debian/scx_tt_*.deb)
# Every target installs what it needs first (Debian packages; the VM kernel is cached).
export BPF_CLANG ?= clang-19
CARGO ?= cargo
RELEASE := --release
VM := tests/vm
DEMO_ARGS := --table schedules/demo.json --duration-s 10 --timeline-slots 40
# Where make demo leaves the run's trace, summary and report (report-demo its screenshot).
DEMO_DIR := target/demo
VM_DEMO_FILES := target/vm/runs/demo/files
# The VM tests: one test binary (tests/vm.rs), one module per folder of tests/vm/scenarios/.
VM_TESTS := --test vm
# One row per VM test, appended by the harness as each test ends (docs/vm-harness.md).
VM_SUMMARY := target/vm/summary.tsv

.PHONY: deps build demo report-demo test test-cluster unit test-vm test-vm-all test-vm-loaded test-scale test-kernels test-kernel vm-kernel vm-initrd bench bench-lateness bench-demos fmt install deb
deps:
	bash scripts/install-deps.sh

build: deps
	$(CARGO) build $(RELEASE)

# deps installs the external readers of the Perfetto and browser tests: here they must run
unit: deps
	SCX_TT_REQUIRE_PERFETTO=1 SCX_TT_REQUIRE_CHROMIUM=1 $(CARGO) test $(RELEASE) --workspace

vm-kernel: deps
	bash $(VM)/kernel.sh
	bash $(VM)/qemu.sh

# The guest's binaries come from the test build (`cargo test` builds every binary the
# integration tests run): after `make unit` that is done, whereas `cargo build` would compile
# the crate again (its build dependencies resolve other features with the dev-dependencies,
# so libbpf-cargo, scx_utils and scx_tt itself were rebuilt: minutes of `make test`). make demo
# packs what `make build` built.
vm-initrd: deps vm-kernel
	$(CARGO) test $(RELEASE) $(VM_TESTS) --no-run
	bash $(VM)/mkinitrd.sh

demo: build
	@mkdir -p $(DEMO_DIR)
	@if [ -d /sys/kernel/sched_ext ]; then \
	  echo "demo: this kernel has sched_ext; running scx_tt directly"; \
	  ./target/release/scx_tt $(DEMO_ARGS) --trace $(DEMO_DIR)/demo.trace.jsonl \
	    --summary-json $(DEMO_DIR)/demo.json; \
	else \
	  echo "demo: this kernel has no sched_ext (CONFIG_SCHED_CLASS_EXT); running in a VM"; \
	  $(MAKE) --no-print-directory vm-kernel && bash $(VM)/mkinitrd.sh && \
	  bash $(VM)/run.sh --scenario demo --smp 3 --tries 8 --live --timeout-s 180 && \
	  cp $(VM_DEMO_FILES)/demo.trace.jsonl $(VM_DEMO_FILES)/demo.json $(DEMO_DIR)/; \
	fi && \
	./target/release/scx_tt report $(DEMO_DIR)/demo.trace.jsonl --summary $(DEMO_DIR)/demo.json \
	  --plan schedules/demo.json -o $(DEMO_DIR)/report.html && \
	echo "demo: the run's report: $(CURDIR)/$(DEMO_DIR)/report.html (docs/report.md; \
	make report-demo takes its screenshot)"

# The demo run's report (make demo first; without its trace, a simulated run of the demo plan)
# and a screenshot of it in headless chromium: target/demo/report.html and report.png.
report-demo: build
	@mkdir -p $(DEMO_DIR)
	@if [ ! -f $(DEMO_DIR)/demo.trace.jsonl ]; then \
	  echo "report-demo: no demo run in $(DEMO_DIR) (make demo): reporting a simulated run"; \
	  ./target/release/scx_tt simulate --table schedules/demo.json --policy dpm --frames 20 \
	    --trace $(DEMO_DIR)/demo.trace.jsonl > /dev/null && \
	  ./target/release/scx_tt report $(DEMO_DIR)/demo.trace.jsonl --plan schedules/demo.json \
	    -o $(DEMO_DIR)/report.html; \
	elif [ ! -f $(DEMO_DIR)/report.html ]; then \
	  ./target/release/scx_tt report $(DEMO_DIR)/demo.trace.jsonl --summary $(DEMO_DIR)/demo.json \
	    --plan schedules/demo.json -o $(DEMO_DIR)/report.html; \
	fi
	@d=$$(mktemp -d); chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
	  --user-data-dir=$$d --window-size=1400,2400 --screenshot=$(CURDIR)/$(DEMO_DIR)/report.png \
	  file://$(CURDIR)/$(DEMO_DIR)/report.html 2>/dev/null; rc=$$?; rm -rf $$d; exit $$rc
	@echo "report-demo: $(CURDIR)/$(DEMO_DIR)/report.html, screenshot $(DEMO_DIR)/report.png"

# The smoke tests first (VM, kernel, initramfs and the harness's crash/hang paths work; when
# they fail nothing else runs), then every other VM test, one VM at a time. The summary table
# of this run is printed at the end whatever the outcome, and the exit status is the tests'.
# $(1): a command that the two cargo runs go through (test-vm-loaded: the load beside them).
VM_SMOKE := $(CARGO) test $(RELEASE) $(VM_TESTS) smoke -- --ignored --nocapture
VM_REST := $(CARGO) test $(RELEASE) $(VM_TESTS) -- --ignored --test-threads=1 --nocapture \
  --skip smoke --skip run_dir --skip scale::
define run_vm_tests
@rm -f $(VM_SUMMARY) $(dir $(VM_SUMMARY))failures.txt
@rc=0; $(1) sh -xc '$(VM_SMOKE) && $(VM_REST)' || rc=$$?; \
  bash scripts/vm-summary.sh $(VM_SUMMARY); exit $$rc
endef

test-vm: vm-initrd
	$(call run_vm_tests)

# test-vm on a busy host: stress-ng keeps both cores busy at nice 0 from before the first test
# to after the last (also on failure or Ctrl-C); the build before it runs without the load.
test-vm-loaded: vm-initrd
	$(call run_vm_tests,bash scripts/with-load.sh)

# A larger node by hand (issue 34 item 3; not in make test): -smp 9 (SCX_TT_VM_SCALE_SMP=N for
# more), every CPU but 0 managed, 40 generated tasks under --planner dvfs and a stream of
# admissions; prints per-CPU tick lateness, the planner's late slots and the round trips.
test-scale: vm-initrd
	$(CARGO) test $(RELEASE) $(VM_TESTS) scale:: -- --ignored --nocapture

# The other kernels (docs/vm-harness.md, "Kernels"): each is fetched or built (cached), then its
# VMs run the smoke tests and the core set that judges the kernel side, or every VM test.
KERNELS ?= rt lts lts-rt
test-kernels: vm-initrd
	bash scripts/test-kernels.sh $(KERNELS)

test-kernel: vm-initrd
	@[ -n "$(KERNEL)" ] || { echo "make test-kernel KERNEL=NAME (default, rt, lts, lts-rt)" >&2; exit 2; }
	bash scripts/test-kernels.sh --all $(KERNEL)

# The default kernel's whole suite while the other kernels are fetched and built beside it
# (nice 19), then the smoke test and the core set on each (scripts/test-vm-all.sh).
test-vm-all: vm-initrd
	bash scripts/test-vm-all.sh $(KERNELS)

# make test: the unit tests, then test-vm-all; the other kernels' preparation starts before the
# unit tests (scripts/test-vm-all.sh --unit), so that it overlaps them too.
# make test's other kernel: 6.12 LTS with PREEMPT_RT (the LTS and the real-time kernel in one;
# the quick core set). All three kernels took make test past CI's 90 min (2026-11-29: unit
# 14 min, default kernel 48.5 min, about 5 min a kernel); make test-vm-all runs them all.
TEST_KERNELS ?= lts-rt
test: deps vm-kernel
	bash scripts/test-vm-all.sh --unit $(TEST_KERNELS)

# The Kubernetes integration's full test (issue 35, docs/cluster.md): a real etcd, kube-apiserver
# and kube-scheduler with the ScxTT plugin, 5 scx_tt --simulated-node nodes and a stopped one,
# 200 pods. make test runs the reduced form (1 node, 20 pods).
test-cluster:
	$(CARGO) build $(RELEASE) --bin scx_tt
	SCX_TT=$(CURDIR)/target/release/scx_tt bash cluster/test.sh

# The pure benchmarks (no VM); bench-lateness boots the VM.
bench: build
	$(CARGO) bench --bench plan_load --bench planner_step --bench planner_admission --bench planner_latency --bench energy_experiment --bench control_admission --bench server_designs --bench adaptive_experiment

bench-lateness: vm-initrd
	$(CARGO) bench --bench lateness

bench-demos: vm-initrd
	$(CARGO) bench --bench demos_lateness

fmt:
	$(CARGO) fmt

# `make install`: what the Debian package holds too ([package.metadata.deb] in Cargo.toml;
# tests/packaging.rs checks both lists). The unit's paths follow PREFIX; the defaults file
# goes to $(SYSCONFDIR)/default and is not replaced when it exists (it is the admin's).
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
UNITDIR ?= $(PREFIX)/lib/systemd/system
DOCDIR ?= $(PREFIX)/share/doc/scx-tt
SYSCONFDIR ?= /etc
BIN ?= target/release/scx_tt
INSTALL_DOCS := README.md docs/service.md docs/run-output.md docs/plan-format.md docs/energy.md docs/control.md
INSTALL_EXAMPLES := schedules/demo.json

install:
	@test -x $(BIN) || { echo "install: no $(BIN): run \`make build\` first"; exit 1; }
	install -D -m 0755 $(BIN) $(DESTDIR)$(BINDIR)/scx_tt
	install -d $(DESTDIR)$(UNITDIR)
	sed -e 's|/usr/bin/scx_tt|$(BINDIR)/scx_tt|g' -e 's|/usr/share/doc/scx-tt|$(DOCDIR)|g' \
	  -e 's|/etc/default/scx_tt|$(SYSCONFDIR)/default/scx_tt|g' \
	  packaging/scx_tt.service > $(DESTDIR)$(UNITDIR)/scx_tt.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/scx_tt.service
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/default/scx_tt ]; then \
	  echo "install: keeping $(DESTDIR)$(SYSCONFDIR)/default/scx_tt"; \
	else \
	  install -D -m 0644 packaging/scx_tt.default $(DESTDIR)$(SYSCONFDIR)/default/scx_tt; \
	fi
	install -d $(DESTDIR)$(DOCDIR)/examples
	install -m 0644 $(INSTALL_DOCS) $(DESTDIR)$(DOCDIR)/
	install -m 0644 $(INSTALL_EXAMPLES) $(DESTDIR)$(DOCDIR)/examples/

# cargo-deb builds the release binary itself (BPF_CLANG is exported above).
deb: deps
	@command -v cargo-deb >/dev/null || $(CARGO) install cargo-deb --locked --version 3.8.0
	$(CARGO) deb
