package testtools

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// helmTimeout bounds one helm command run through RunHelm; generous
// because the tests may share the machine with long builds.
const helmTimeout = 2 * time.Minute

// HelmEnv is the whole environment helm runs with in tests: its
// configuration, cache and data under home, a kubeconfig path that does
// not exist (helm renders and lints; it never talks to an API server) and
// PATH.
func HelmEnv(home string) []string {
	return []string{
		"HOME=" + home,
		"HELM_CONFIG_HOME=" + filepath.Join(home, "config"),
		"HELM_CACHE_HOME=" + filepath.Join(home, "cache"),
		"HELM_DATA_HOME=" + filepath.Join(home, "data"),
		"KUBECONFIG=" + filepath.Join(home, "no-kubeconfig"),
		"PATH=" + os.Getenv("PATH"),
	}
}

// RunHelm runs the helm binary (Helm(t)) with args in HelmEnv of a fresh
// temporary home, bounded by ctx and a timeout, and returns its standard
// output and standard error. ctx is a parameter, not t.Context(), because
// Ginkgo's GinkgoT().Context() is not the spec's context.
func RunHelm(ctx context.Context, t T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	bin := Helm(t)
	home, err := os.MkdirTemp("", "helm-home-")
	if err != nil {
		t.Fatalf("creating a home for helm: %v", err)
	}
	defer func() { _ = os.RemoveAll(home) }()
	ctx, cancel := context.WithTimeout(ctx, helmTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = HelmEnv(home)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// HelmSetArgs are the --set flags of the given values, in order.
func HelmSetArgs(set ...string) []string {
	args := make([]string, 0, 2*len(set))
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return args
}

// HelmTemplateArgs are the arguments of `helm template` that render the
// chart in chartDir as release in namespace with the given --set values.
func HelmTemplateArgs(release, chartDir, namespace string, set ...string) []string {
	return append([]string{"template", release, chartDir, "--namespace", namespace}, HelmSetArgs(set...)...)
}
