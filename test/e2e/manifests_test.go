package e2e

import (
	"strings"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	"github.com/infrastate/backend-operator/internal/testenv"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// The specs build their objects with the shared builders
// (internal/testing/builders) and apply them with kubectl as a user would,
// through manifestOf. Their objects carry no namespace: kubectl apply puts
// them in the namespace it is given.

// makeBackend starts an HttpBackend of the state at address, probed every
// 10s, the shortest interval the API allows.
func makeBackend(name, address string) *builders.HttpBackendWrapper {
	return builders.MakeHttpBackend(name, "", address).ProbeInterval(10 * time.Second)
}

// suiteBackend starts an HttpBackend of the state stateName on the suite's
// state server, locking at its address, with basic auth and mutual TLS
// through the objects createStateServerSecrets makes.
func suiteBackend(name, stateName string) *builders.HttpBackendWrapper {
	return makeBackend(name, stateServer.stateURL(stateName)).Locks().
		BasicAuth(stateUser, "demo-state-password", "").ClientCertificate("demo-state-client-tls").CAFromConfigMap("demo-state-ca")
}

// manifestOf is objs as the YAML documents kubectl apply reads: each with
// its apiVersion and kind, and without the empty status and creation time
// a typed object carries.
func manifestOf(objs ...client.Object) string {
	docs := make([]string, 0, len(objs))
	for _, obj := range objs {
		gvk, err := apiutil.GVKForObject(obj, testenv.Scheme())
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		fields, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		u := &unstructured.Unstructured{Object: fields}
		u.SetGroupVersionKind(gvk)
		delete(u.Object, "status")
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		data, err := yaml.Marshal(u.Object)
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		docs = append(docs, string(data))
	}
	return strings.Join(docs, "---\n")
}
