package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/infrastate/backend-operator/internal/testenv"
)

// identityKinds are the kinds of an install that make up the manager's
// identity and what it may do: its namespace, its ServiceAccount and the
// RBAC objects that bind it.
var identityKinds = map[string]bool{
	"Namespace":          true,
	"ServiceAccount":     true,
	"Role":               true,
	"RoleBinding":        true,
	"ClusterRole":        true,
	"ClusterRoleBinding": true,
}

// managerIdentity is a ServiceAccount the manager can run as, bound to the
// RBAC of one way of installing it.
type managerIdentity struct {
	// source names that install, for messages: config/default, the chart.
	source string
	// namespace and name are the ServiceAccount's.
	namespace, name string
	// kubeconfig authenticates as the ServiceAccount.
	kubeconfig string
	// metricsReader is the install's ClusterRole that may scrape the
	// manager's metrics, empty when it has none.
	metricsReader string
}

// chartRelease is the release name of the chart's identity in the suite:
// not the chart's name, so that its objects' names differ from those of
// config/default, applied beside them.
const chartRelease = "infrastate"

// The environment variable E2E_MANAGER_RBAC says whose RBAC the suite's
// managers run with: the chart's (the default) or config/default's
// ("kustomize"). Both are applied, and "The manager's effective
// permissions" proves they grant the same.
const managerRBACEnv = "E2E_MANAGER_RBAC"

// suiteIdentity applies the identities of config/default and of the chart
// (rendered for the release chartRelease in deployNamespace) and returns
// the one E2E_MANAGER_RBAC selects, then the other.
func suiteIdentity(ctx context.Context, dir string) (selected, other managerIdentity) {
	kustomized := setUpManagerIdentity(ctx, dir, "config/default", kustomize(ctx, filepath.Join(testenv.RepoRoot(), "config", "default")))
	charted := setUpManagerIdentity(ctx, dir, "the chart", helmTemplate(ctx, chartRelease, deployNamespace))
	switch os.Getenv(managerRBACEnv) {
	case "", "chart":
		return charted, kustomized
	case "kustomize":
		return kustomized, charted
	default:
		Fail(managerRBACEnv + " must be chart or kustomize")
		return managerIdentity{}, managerIdentity{}
	}
}

// kustomize renders the kustomization in dir with `kubectl kustomize`.
func kustomize(ctx context.Context, dir string) []*unstructured.Unstructured {
	return decodeDocuments([]byte(kustomizeYAML(ctx, dir)))
}

// kustomizeYAML renders the kustomization in dir with `kubectl kustomize`
// and returns the YAML it prints, failing on an error or a warning.
func kustomizeYAML(ctx context.Context, dir string) string {
	r := kc.run(ctx, "", "", "kustomize", dir)
	Expect(r.err).NotTo(HaveOccurred(), "kubectl kustomize %s:\n%s", dir, r.stderr)
	Expect(r.stderr).To(BeEmpty(), "warnings of kubectl kustomize %s", dir)
	return r.stdout
}

// setUpManagerIdentity applies the Namespace, ServiceAccount and RBAC
// objects of an install (objs, exactly as its tool renders them; source
// names it), and writes into dir a kubeconfig that authenticates as its
// one ServiceAccount with a token from the TokenRequest API. Managers run
// with that kubeconfig: a permission the install lacks fails the spec
// that needs it.
func setUpManagerIdentity(ctx context.Context, dir, source string, objs []*unstructured.Unstructured) managerIdentity {
	list := unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List"}}
	var accounts []*unstructured.Unstructured
	var metricsReader string
	for _, o := range objs {
		if identityKinds[o.GetKind()] {
			list.Items = append(list.Items, *o)
		}
		if o.GetKind() == "ServiceAccount" {
			accounts = append(accounts, o)
		}
		if o.GetKind() == "ClusterRole" && strings.HasSuffix(o.GetName(), "-metrics-reader") {
			metricsReader = o.GetName()
		}
	}
	Expect(accounts).To(HaveLen(1), "%s should have one ServiceAccount", source)
	manifest, err := json.Marshal(&list)
	Expect(err).NotTo(HaveOccurred())
	// Server-side, as hack/deploy.sh, helm and the config/default specs apply it.
	applied := kc.run(ctx, "", string(manifest), "apply", "--server-side", "-f", "-")
	Expect(applied.err).NotTo(HaveOccurred(), "applying the manager's RBAC of %s:\n%s", source, applied.stderr)

	id := managerIdentity{source: source, namespace: accounts[0].GetNamespace(), name: accounts[0].GetName(), metricsReader: metricsReader}
	id.kubeconfig = serviceAccountKubeconfig(ctx, id.namespace, id.name, filepath.Join(dir, id.namespace+"."+id.name+".kubeconfig"))
	Expect(kc.as(id.kubeconfig).must(ctx, "", "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")).To(Equal(id.user()))
	return id
}

// user is the identity's user name.
func (id managerIdentity) user() string {
	return "system:serviceaccount:" + id.namespace + ":" + id.name
}

// forbidden is what the API server answers a request RBAC denies.
const forbidden = "is forbidden: "

// expectNeverForbidden fails when the manager's log shows a request the API
// server denied. The manager retries or only logs some failures (an Event it
// could not write, a watch it could not start), so a permission the shipped
// RBAC lacks does not always fail the spec that needs it by itself.
func expectNeverForbidden(m *managerProcess) {
	Expect(m.logLinesWith(forbidden)).To(BeEmpty(), "the API server denied the manager, running with the RBAC of %s, a request: it lacks a permission", m.identity.source)
}

// serviceAccountKubeconfig writes to path a kubeconfig for the suite's API
// server (its address and CA from the admin kubeconfig) that authenticates
// with a two-hour token of the ServiceAccount namespace/name, and returns
// path.
func serviceAccountKubeconfig(ctx context.Context, namespace, name, path string) string {
	// What `kubectl create token --duration=2h` asks for, without printing
	// the token in the spec's output.
	request := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](2 * 60 * 60)}}
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	Expect(k8sClient.SubResource("token").Create(ctx, account, request)).To(Succeed())
	token := request.Status.Token
	Expect(token).NotTo(BeEmpty())

	admin, err := clientcmd.LoadFromFile(kc.kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	current, ok := admin.Contexts[admin.CurrentContext]
	Expect(ok).To(BeTrue(), "the admin kubeconfig has no current context")
	cluster, ok := admin.Clusters[current.Cluster]
	Expect(ok).To(BeTrue(), "the admin kubeconfig has no cluster %q", current.Cluster)

	config := clientcmdapi.NewConfig()
	config.Clusters["e2e"] = &clientcmdapi.Cluster{
		Server:                   cluster.Server,
		CertificateAuthority:     cluster.CertificateAuthority,
		CertificateAuthorityData: cluster.CertificateAuthorityData,
	}
	config.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	config.Contexts[name] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: name, Namespace: namespace}
	config.CurrentContext = name
	Expect(clientcmd.WriteToFile(*config, path)).To(Succeed())
	Expect(os.Chmod(path, 0o600)).To(Succeed())
	return path
}

// as is kubectl with kubeconfig instead of the suite's admin one.
func (k *kubectl) as(kubeconfig string) *kubectl {
	return &kubectl{path: k.path, home: k.home, kubeconfig: kubeconfig}
}
