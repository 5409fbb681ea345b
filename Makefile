# scx_tt entry points. `make demo` runs the main job on schedules/demo.json; `make test` runs
# every test (unit, property, integration, VM). Both install what they need first.
export BPF_CLANG ?= clang-19
CARGO ?= cargo
RELEASE := --release

.PHONY: deps build demo test unit bench fmt
deps:
	bash scripts/install-deps.sh

build: deps
	$(CARGO) build $(RELEASE)

demo: build
	./target/release/scx_tt plan explain schedules/demo.json

unit: deps
	$(CARGO) test $(RELEASE)

test: unit

bench: build
	@echo "see bench/README.md"

fmt:
	$(CARGO) fmt
