package e2e

import (
	"context"
	"path/filepath"
	"strings"

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
	args := testtools.HelmTemplateArgs(release, filepath.Join(testenv.RepoRoot(), "charts", "backend-operator"), namespace, set...)
	stdout, stderr, err := testtools.RunHelm(ctx, GinkgoT(), args...)
	Expect(err).NotTo(HaveOccurred(), "helm %s:\n%s", strings.Join(args, " "), stderr)
	return decodeDocuments([]byte(stdout))
}
