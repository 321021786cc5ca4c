package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/infrastate/backend-operator/internal/testenv"
	"github.com/infrastate/backend-operator/internal/testtools"
)

// helmTemplate renders charts/backend-operator with `helm template` as the
// release in namespace, with the given --set values, and returns its
// objects. Helm runs with a configuration, cache and data of its own and no
// kubeconfig: it renders, it never talks to the API server.
func helmTemplate(ctx context.Context, release, namespace string, set ...string) []*unstructured.Unstructured {
	args := []string{"template", release, filepath.Join(testenv.RepoRoot(), "charts", "backend-operator"), "--namespace", namespace}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	home := GinkgoT().TempDir()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, testtools.Helm(GinkgoT()), args...)
	cmd.Env = testtools.HelmEnv(home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	Expect(cmd.Run()).To(Succeed(), "helm %s:\n%s", strings.Join(args, " "), stderr.String())
	return decodeDocuments(stdout.Bytes())
}
