package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/infrastate/backend-operator/internal/testenv"
	"github.com/infrastate/backend-operator/internal/testtools"
)

// backendFile says which rendered file a runner uses.
type backendFile string

const (
	// backendTF mounts only backend.tf next to the stack (a ConfigMap
	// volume with items, or a subPath mount).
	backendTF backendFile = "backend.tf"
	// backendTFJSON mounts only backend.tf.json next to the stack.
	backendTFJSON backendFile = "backend.tf.json"
	// backendTFBackend mounts the whole ConfigMap outside the stack and
	// runs terraform init -backend-config=backend.tfbackend, with an empty
	// backend "http" {} block in the stack.
	backendTFBackend backendFile = "backend.tfbackend"
)

// runner is a Terraform working directory prepared exactly as a runner pod
// sees it: the stack docs/examples/network, the rendered backend file from
// the ConfigMap, and the credentials Secret's keys as environment
// variables (envFrom). Its commands run with terraform or tofu.
type runner struct {
	cli         testtools.Runner
	dir         string
	env         []string
	initArgs    []string
	credentials map[string]string
}

// newRunner prepares a terraform runner, with backend.tf, for the backend
// whose rendered objects are configMap and secret in namespace. Its files live in a new
// directory under parent, which must last as long as the runner is used (in
// an Ordered container, a directory made in BeforeAll).
func newRunner(ctx context.Context, parent, namespace, configMap, secret string) *runner {
	return newRunnerWith(ctx, terraformCLI, parent, namespace, configMap, secret, backendTF)
}

// newRunnerWith is newRunner with the CLI cli: terraformCLI or tofuCLI.
func newRunnerWith(ctx context.Context, cli testtools.Runner, parent, namespace, configMap, secret string, file backendFile) *runner {
	root, err := os.MkdirTemp(parent, "runner-")
	Expect(err).NotTo(HaveOccurred())
	stack := filepath.Join(root, "stack")
	Expect(os.MkdirAll(stack, 0o700)).To(Succeed())
	mainTF, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "docs", "examples", "network", "main.tf"))
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(filepath.Join(stack, "main.tf"), mainTF, 0o600)).To(Succeed())

	files := kc.configMapData(ctx, namespace, configMap)
	Expect(files).To(HaveKey(string(file)))
	r := &runner{cli: cli, dir: stack}
	switch file {
	case backendTF, backendTFJSON:
		Expect(os.WriteFile(filepath.Join(stack, string(file)), []byte(files[string(file)]), 0o600)).To(Succeed())
	case backendTFBackend:
		mount := filepath.Join(root, "backend")
		Expect(os.MkdirAll(mount, 0o700)).To(Succeed())
		for name, content := range files {
			Expect(os.WriteFile(filepath.Join(mount, name), []byte(content), 0o600)).To(Succeed())
		}
		partial, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "docs", "examples", "network", "backend_partial.tf.example"))
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(filepath.Join(stack, "backend_partial.tf"), partial, 0o600)).To(Succeed())
		r.initArgs = []string{"-backend-config=" + filepath.Join(mount, "backend.tfbackend")}
	}

	r.credentials = kc.secretData(ctx, namespace, secret)
	// Through the egress recorder: terraform reaches only loopback.
	r.env = append(testtools.TerraformEnv(GinkgoT(), root), egress.env()...)
	keys := make([]string, 0, len(r.credentials))
	for k := range r.credentials {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		r.env = append(r.env, k+"="+r.credentials[k])
	}
	return r
}

// run runs the runner's CLI with args in the stack directory.
func (r *runner) run(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.cli.Path, args...)
	cmd.Dir = r.dir
	cmd.Env = r.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	GinkgoWriter.Printf("$ %s %s\n%s", r.cli.Name, strings.Join(args, " "), out.String())
	return out.String(), err
}

// must runs the runner's CLI and expects success.
func (r *runner) must(ctx context.Context, args ...string) string {
	out, err := r.run(ctx, args...)
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), "%s %s:\n%s", r.cli.Name, strings.Join(args, " "), out)
	return out
}

// init runs terraform init with the runner's backend configuration.
func (r *runner) init(ctx context.Context) {
	r.must(ctx, append([]string{"init", "-input=false"}, r.initArgs...)...)
}

// apply runs terraform apply. A backend with probe.lockCheck takes the
// lock for a moment on every probe, so the apply waits for a lock rather
// than failing at once, as a runner should.
func (r *runner) apply(ctx context.Context, extraArgs ...string) {
	r.must(ctx, append([]string{"apply", "-auto-approve", "-input=false", "-lock-timeout=30s"}, extraArgs...)...)
}

// output is one entry of terraform output -json.
type output struct {
	Sensitive bool            `json:"sensitive"`
	Type      json.RawMessage `json:"type"`
	Value     json.RawMessage `json:"value"`
}

// outputs runs terraform output -json.
func (r *runner) outputs(ctx context.Context) map[string]output {
	var out map[string]output
	Expect(json.Unmarshal([]byte(r.must(ctx, "output", "-json")), &out)).To(Succeed())
	return out
}

// serial reads the serial of the remote state with terraform state pull.
func (r *runner) serial(ctx context.Context) int64 {
	var state struct {
		Serial int64 `json:"serial"`
	}
	Expect(json.Unmarshal([]byte(r.must(ctx, "state", "pull")), &state)).To(Succeed())
	return state.Serial
}
