package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"

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

// identityKinds are the kinds of config/default that make up the manager's
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

// setUpManagerIdentity applies the Namespace, ServiceAccount and RBAC
// objects of config/default exactly as `kubectl kustomize` renders them,
// and writes into dir a kubeconfig that authenticates as the manager's
// ServiceAccount with a token from the TokenRequest API. It returns that
// kubeconfig's path: startManager runs every manager with it, so a
// permission the shipped RBAC lacks fails the spec that needs it.
func setUpManagerIdentity(ctx context.Context, dir string) string {
	r := kc.run(ctx, "", "", "kustomize", filepath.Join(testenv.RepoRoot(), "config", "default"))
	Expect(r.err).NotTo(HaveOccurred(), "kubectl kustomize config/default:\n%s", r.stderr)
	list := unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List"}}
	for _, o := range decodeDocuments([]byte(r.stdout)) {
		if identityKinds[o.GetKind()] {
			list.Items = append(list.Items, *o)
		}
	}
	manifest, err := json.Marshal(&list)
	Expect(err).NotTo(HaveOccurred())
	// Server-side, as hack/deploy.sh and the config/default specs apply it.
	applied := kc.run(ctx, "", string(manifest), "apply", "--server-side", "-f", "-")
	Expect(applied.err).NotTo(HaveOccurred(), "applying the manager's RBAC:\n%s", applied.stderr)

	kubeconfig := serviceAccountKubeconfig(ctx, deployNamespace, managerServiceAccountName, filepath.Join(dir, "manager.kubeconfig"))
	Expect(kc.as(kubeconfig).must(ctx, "", "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")).To(Equal(managerServiceAccount))
	return kubeconfig
}

// forbidden is what the API server answers a request RBAC denies.
const forbidden = "is forbidden: "

// expectNeverForbidden fails when the manager's log shows a request the API
// server denied. The manager retries or only logs some failures (an Event it
// could not write, a watch it could not start), so a permission the shipped
// RBAC lacks does not always fail the spec that needs it by itself.
func expectNeverForbidden(m *managerProcess) {
	Expect(m.logLinesWith(forbidden)).To(BeEmpty(), "the API server denied the manager a request: the RBAC config/rbac ships lacks a permission")
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
