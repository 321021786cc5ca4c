# backend-operator Makefile. Every tool comes from the Go module proxy:
# controller-gen is a go.mod tool, and the envtest control plane, kubectl,
# terraform, tofu, helm and golangci-lint are built from Go modules by hack/ scripts into
# a cache outside the repository.

IMG ?= ghcr.io/infrastate/backend-operator:latest
CONTAINER_TOOL ?= docker
GO ?= go
CONTROLLER_GEN ?= $(GO) tool controller-gen
KUBECTL ?= kubectl
KUSTOMIZE ?= $(KUBECTL) kustomize
GO_TEST_FLAGS ?= -race -count=1 -timeout 30m

# CHART is the Helm chart. Its crds/ and files/ are copies that make
# manifests writes; everything else in it is written by hand.
CHART := charts/backend-operator

# Paths controller-gen writes, and the chart's copies of them (and of the
# admission policy) that make manifests keeps identical. make test fails
# when they are stale.
GENERATED_PATHS := api config/crd/bases config/rbac/role.yaml $(CHART)/crds $(CHART)/files

# ENVTEST_SUITES names every top-level test that starts a kube-apiserver and
# etcd (through internal/testenv). make unit skips exactly these, so a test
# that needs a control plane must be in this list, and a name in it must be
# defined exactly once in the tree (make unit checks both):
# - make unit points KUBEBUILDER_ASSETS at a path that cannot exist, so an
#   envtest suite missing from the list fails to start instead of running;
# - a stale or duplicated name fails the check, so the skip can hide nothing.
ENVTEST_SUITES := TestChartApply TestControllers TestE2E TestValidation
NO_CONTROL_PLANE := /dev/null/make-unit-starts-no-control-plane
empty :=
space := $(empty) $(empty)

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  %-18s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: ## Generate the CRDs and the manager's RBAC role, and copy them and the admission policy into the chart.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd paths="./..." output:crd:artifacts:config=config/crd/bases
	rm -rf $(CHART)/crds $(CHART)/files
	mkdir -p $(CHART)/crds $(CHART)/files
	cp config/crd/bases/*.yaml $(CHART)/crds/
	cp config/rbac/role.yaml $(CHART)/files/manager-role.yaml
	cp config/admission/validating_admission_policy.yaml $(CHART)/files/validating-admission-policy.yaml

.PHONY: generate
generate: ## Generate the DeepCopy methods of the API types.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./..."

.PHONY: fmt
fmt: ## Run go fmt.
	$(GO) fmt ./...

.PHONY: vet
vet: ## Run go vet.
	$(GO) vet ./...

.PHONY: verify-generated
verify-generated: ## Fail when make manifests generate would change tracked files.
	hack/verify-generated.sh $(GENERATED_PATHS)

.PHONY: verify-fmt
verify-fmt: ## Fail when a Go file is not gofmt-formatted.
	@out="$$(gofmt -l $$(git ls-files '*.go'))"; if [ -n "$$out" ]; then echo "not gofmt-formatted:"; echo "$$out"; exit 1; fi

.PHONY: lint
lint: ## Run golangci-lint (.golangci.yml) on every package.
	@linter="$$(hack/install-tools.sh golangci-lint)" && "$$linter" run $(LINT_FLAGS) ./...

.PHONY: test-tools
test-tools: ## Build (once, cached outside the repository) the control plane, terraform, tofu, kubectl, helm and golangci-lint.
	@hack/setup-envtest.sh >/dev/null
	@hack/install-tools.sh terraform >/dev/null
	@hack/install-tools.sh tofu >/dev/null
	@hack/install-tools.sh kubectl >/dev/null
	@hack/install-tools.sh helm >/dev/null
	@hack/install-tools.sh golangci-lint >/dev/null

.PHONY: unit
unit: ## Run every test that needs no control plane: all but the envtest suites in ENVTEST_SUITES.
	@for suite in $(ENVTEST_SUITES); do \
	  n=$$(grep -rlE --include='*_test.go' "^func $$suite\(" . | wc -l); \
	  if [ "$$n" -ne 1 ]; then echo "ENVTEST_SUITES: $$suite is defined in $$n test files, want 1" >&2; exit 1; fi; \
	done
	@hack/install-tools.sh terraform >/dev/null
	@hack/install-tools.sh tofu >/dev/null
	@hack/install-tools.sh kubectl >/dev/null
	@hack/install-tools.sh helm >/dev/null
	KUBEBUILDER_ASSETS=$(NO_CONTROL_PLANE) \
	TERRAFORM="$$(hack/install-tools.sh terraform)" \
	TOFU="$$(hack/install-tools.sh tofu)" \
	KUBECTL="$$(hack/install-tools.sh kubectl)" \
	HELM="$$(hack/install-tools.sh helm)" \
	$(GO) test $(GO_TEST_FLAGS) -skip '^($(subst $(space),|,$(strip $(ENVTEST_SUITES))))$$' ./...

.PHONY: test
test: verify-generated verify-fmt vet lint test-tools ## Run the linter and every test against a real kube-apiserver, etcd, terraform, tofu, kubectl and helm.
	KUBEBUILDER_ASSETS="$$(hack/setup-envtest.sh)" \
	TERRAFORM="$$(hack/install-tools.sh terraform)" \
	TOFU="$$(hack/install-tools.sh tofu)" \
	KUBECTL="$$(hack/install-tools.sh kubectl)" \
	HELM="$$(hack/install-tools.sh helm)" \
	$(GO) test $(GO_TEST_FLAGS) ./...

.PHONY: e2e
e2e: test-tools ## Run only the end to end suite (test/e2e): the binaries, kubectl, terraform and tofu against a real control plane.
	KUBEBUILDER_ASSETS="$$(hack/setup-envtest.sh)" \
	TERRAFORM="$$(hack/install-tools.sh terraform)" \
	TOFU="$$(hack/install-tools.sh tofu)" \
	KUBECTL="$$(hack/install-tools.sh kubectl)" \
	HELM="$$(hack/install-tools.sh helm)" \
	$(GO) test -count=1 -timeout 15m ./test/e2e/... $(E2E_FLAGS)

##@ Benchmarks

# N is the number of backends of make bench-scale; SCALE_FLAGS are more
# flags of test/scale (go run ./test/scale -h lists them).
N ?= 1000
SCALE_FLAGS ?=

.PHONY: bench-scale
bench-scale: ## Measure the operator with N backends (default 1000) against a floor controller; SCALE_FLAGS for more flags (docs/performance.md).
	KUBEBUILDER_ASSETS="$$(hack/setup-envtest.sh)" \
	$(GO) run ./test/scale -n $(N) $(SCALE_FLAGS)

##@ Build

.PHONY: build
build: ## Build the manager binary.
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/manager ./cmd/manager

.PHONY: run
run: manifests generate fmt vet ## Run the manager against the current cluster, or a local demo control plane when none answers (Ctrl-C stops it).
	hack/run-local.sh $(ARGS)

.PHONY: docker-build
docker-build: ## Build the manager image.
	$(CONTAINER_TOOL) build -t $(IMG) .

##@ Deployment

.PHONY: install
install: manifests ## Install the CRDs into the cluster in the current kubeconfig.
	$(KUSTOMIZE) config/crd | $(KUBECTL) apply --server-side -f -

.PHONY: uninstall
uninstall: manifests ## Remove the CRDs from the cluster in the current kubeconfig.
	$(KUSTOMIZE) config/crd | $(KUBECTL) delete --ignore-not-found -f -

.PHONY: deploy
deploy: manifests ## Deploy the manager, with the image IMG (a tag or a digest), into the cluster in the current kubeconfig.
	IMG='$(IMG)' KUBECTL='$(KUBECTL)' KUSTOMIZE='$(KUSTOMIZE)' hack/deploy.sh apply config/default

.PHONY: undeploy
undeploy: ## Remove the manager from the cluster in the current kubeconfig.
	KUBECTL='$(KUBECTL)' KUSTOMIZE='$(KUSTOMIZE)' hack/deploy.sh delete config/default
