// Package testtools locates the command-line tools that test suites drive
// (terraform, kubectl) and prepares a clean environment for them.
//
// The tools are built from Go modules by hack/install-tools.sh and handed to
// the tests through environment variables; `make test` does this. A test that
// needs a tool fails, never skips, when it is missing: a skipped end-to-end
// test would pass silently.
package testtools

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// T is the part of testing.TB these helpers use. Both *testing.T and
// Ginkgo's GinkgoT() satisfy it.
type T interface {
	Helper()
	Fatalf(format string, args ...any)
	Context() context.Context
}

// Terraform returns the path of the terraform binary named by the TERRAFORM
// environment variable, and fails the test when it is unset or not an
// executable file.
func Terraform(t T) string {
	t.Helper()
	return tool(t, "TERRAFORM", "terraform")
}

// Kubectl returns the path of the kubectl binary named by the KUBECTL
// environment variable, and fails the test when it is unset or not an
// executable file.
func Kubectl(t T) string {
	t.Helper()
	return tool(t, "KUBECTL", "kubectl")
}

// tool resolves the binary named by the environment variable env. A bare
// command name is looked up in PATH; other relative paths are refused because
// `go test` runs each package in its own directory.
func tool(t T, env, name string) string {
	t.Helper()
	hint := "run the tests through `make test`, or `export " + env + "=$(hack/install-tools.sh " + name + ")` from the repository root"
	path := os.Getenv(env)
	if path == "" {
		t.Fatalf("%s is not set: %s", env, hint)
	}
	if !filepath.IsAbs(path) {
		if strings.ContainsRune(path, filepath.Separator) {
			t.Fatalf("%s=%q must be an absolute path (tests run in their package directory): %s", env, path, hint)
		}
		found, err := exec.LookPath(path)
		if err != nil {
			t.Fatalf("%s=%q is not in PATH: %s", env, path, hint)
		}
		if path, err = filepath.Abs(found); err != nil {
			t.Fatalf("%s=%q: %v", env, found, err)
		}
	}
	info, err := os.Stat(path)
	switch {
	case err != nil:
		t.Fatalf("%s=%q: %v: %s", env, path, err, hint)
	case !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0:
		t.Fatalf("%s=%q is not an executable file: %s", env, path, hint)
	}
	return path
}

// TerraformEnv returns a clean environment for running terraform in dir: HOME
// and the CLI configuration point into dir (an empty config, so no settings,
// credentials or plugin caches leak in from the developer's machine), the
// data directory is dir/.terraform, checkpoint calls and interactive hints are
// off, and no TF_* variable of the test process is inherited. PATH and the
// temporary directory are kept. Append TF_HTTP_* or other variables to the
// result as needed.
func TerraformEnv(t T, dir string) []string {
	t.Helper()
	home := filepath.Join(dir, ".home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatalf("creating terraform home: %v", err)
	}
	cliConfig := filepath.Join(home, ".terraformrc")
	if err := os.WriteFile(cliConfig, nil, 0o600); err != nil {
		t.Fatalf("writing terraform CLI configuration: %v", err)
	}
	env := []string{
		"HOME=" + home,
		"TF_CLI_CONFIG_FILE=" + cliConfig,
		"TF_DATA_DIR=" + filepath.Join(dir, ".terraform"),
		"TF_IN_AUTOMATION=1",
		"TF_INPUT=0",
		"CHECKPOINT_DISABLE=1",
		"NO_COLOR=1",
	}
	for _, key := range []string{"PATH", "TMPDIR", "SYSTEMROOT"} {
		if v, ok := os.LookupEnv(key); ok {
			env = append(env, key+"="+v)
		}
	}
	return env
}

// terraformTimeout bounds one terraform command run through a Workdir;
// generous because the tests may share the machine with long builds.
const terraformTimeout = 3 * time.Minute

// Workdir is a directory the real terraform runs in, with the environment
// it runs with (usually TerraformEnv plus TF_HTTP_* variables).
type Workdir struct {
	// Terraform is the binary, from Terraform(t).
	Terraform string
	// Dir is the working directory.
	Dir string
	// Env is the complete environment of the command.
	Env []string
}

// Run runs terraform with args in Dir, bounded by the test's context and
// a timeout, and returns its combined output.
func (w Workdir) Run(t T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), terraformTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.Terraform, args...)
	cmd.Dir = w.Dir
	cmd.Env = w.Env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// MustRun runs terraform and fails the test when it fails.
func (w Workdir) MustRun(t T, args ...string) string {
	t.Helper()
	out, err := w.Run(t, args...)
	if err != nil {
		t.Fatalf("terraform %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}
