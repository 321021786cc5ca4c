// Package testenv starts the real kube-apiserver and etcd that the envtest
// suites of this repository run against, with the project's CRDs installed.
// The binaries come from hack/setup-envtest.sh through KUBEBUILDER_ASSETS.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// ErrNoAssets is returned when KUBEBUILDER_ASSETS does not point at the
// control plane binaries. `make unit` points it at a path that cannot
// exist, so that a suite it should have skipped fails here.
var ErrNoAssets = errors.New("KUBEBUILDER_ASSETS does not hold kube-apiserver and etcd: " +
	"run the tests with `make test`, or export KUBEBUILDER_ASSETS=\"$(hack/setup-envtest.sh)\"; " +
	"under `make unit`, which starts no control plane, name the suite's top-level test in ENVTEST_SUITES in the Makefile")

// RepoRoot is the root of the source tree this package was compiled from.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Scheme returns a scheme with the built-in kinds and the project's kinds.
func Scheme() *k8sruntime.Scheme {
	s := k8sruntime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(backendsv1alpha1.AddToScheme(s))
	return s
}

// New returns an environment that installs the generated CRDs. It fails
// when the control plane binaries are missing, rather than letting envtest
// look for them in a default location.
func New() (*envtest.Environment, error) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if info, err := os.Stat(filepath.Join(assets, bin)); assets == "" || err != nil || info.IsDir() {
			return nil, ErrNoAssets
		}
	}
	return &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(RepoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
		Scheme:                Scheme(),
	}, nil
}

// CreateNamespace creates a namespace with a generated name starting with
// prefix and returns its name. Each spec uses its own namespace: envtest has
// no namespace controller, so namespaces are never really deleted.
func CreateNamespace(ctx context.Context, c client.Client, prefix string) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := c.Create(ctx, ns); err != nil {
		return "", fmt.Errorf("creating namespace: %w", err)
	}
	return ns.Name, nil
}
