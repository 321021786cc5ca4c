// Package testtools locates the command-line tools that test suites drive
// (terraform, tofu, kubectl, helm) and prepares a clean environment for them.
//
// The tools are built from Go modules by hack/install-tools.sh and handed to
// the tests through environment variables; `make test` does this. A test that
// needs a tool fails, never skips, when it is missing: a skipped end-to-end
// test would pass silently.
package testtools

import (
	"context"
	"encoding/json"
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

// Tofu returns the path of the OpenTofu binary named by the TOFU environment
// variable, and fails the test when it is unset or not an executable file.
func Tofu(t T) string {
	t.Helper()
	return tool(t, "TOFU", "tofu")
}

// Runner is a command-line tool that runs Terraform configurations: the
// terraform or the tofu binary. Tests that should hold for both run once per
// Runner, as table rows.
type Runner struct {
	// Name is the command's name, "terraform" or "tofu", for test names and
	// messages.
	Name string
	// Flavor is the runner as spec.runner.flavor names it: "terraform" or
	// "opentofu".
	Flavor string
	// Path is the binary.
	Path string
}

// Version returns the runner's version, such as 1.5.7, as `version -json`
// reports it, and fails the test when it cannot tell.
func (r Runner) Version(t T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "runner-version-")
	if err != nil {
		t.Fatalf("creating a directory for %s version: %v", r.Name, err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	out := Workdir{Bin: r.Path, Dir: dir, Env: TerraformEnv(t, dir)}.MustRun(t, "version", "-json")
	var v struct {
		Version string `json:"terraform_version"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Version == "" {
		t.Fatalf("%s version -json: %v\n%s", r.Name, err, out)
	}
	return v.Version
}

// Runners returns terraform and tofu, in that order, and fails the test when
// either is missing.
func Runners(t T) []Runner {
	t.Helper()
	return []Runner{
		{Name: "terraform", Flavor: "terraform", Path: Terraform(t)},
		{Name: "tofu", Flavor: "opentofu", Path: Tofu(t)},
	}
}

// Kubectl returns the path of the kubectl binary named by the KUBECTL
// environment variable, and fails the test when it is unset or not an
// executable file.
func Kubectl(t T) string {
	t.Helper()
	return tool(t, "KUBECTL", "kubectl")
}

// Helm returns the path of the helm binary named by the HELM environment
// variable, and fails the test when it is unset or not an executable file.
func Helm(t T) string {
	t.Helper()
	return tool(t, "HELM", "helm")
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

// TerraformEnv returns a clean environment for running terraform or tofu in
// dir: HOME
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

// terraformTimeout bounds one terraform or tofu command run through a Workdir;
// generous because the tests may share the machine with long builds.
const terraformTimeout = 3 * time.Minute

// Workdir is a directory the real terraform or tofu runs in, with the
// environment it runs with (usually TerraformEnv plus TF_HTTP_* variables).
type Workdir struct {
	// Bin is the runner's binary, from Terraform(t), Tofu(t) or Runners(t).
	Bin string
	// Dir is the working directory.
	Dir string
	// Env is the complete environment of the command.
	Env []string
}

// Run runs the binary with args in Dir, bounded by the test's context and
// a timeout, and returns its combined output.
func (w Workdir) Run(t T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), terraformTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.Bin, args...)
	cmd.Dir = w.Dir
	cmd.Env = w.Env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// MustRun runs the binary and fails the test when it fails.
func (w Workdir) MustRun(t T, args ...string) string {
	t.Helper()
	out, err := w.Run(t, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(w.Bin), strings.Join(args, " "), err, out)
	}
	return out
}
