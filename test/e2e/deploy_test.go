package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/infrastate/backend-operator/internal/testenv"
)

// deployNamespace is where config/default deploys the manager.
const deployNamespace = "backend-operator-system"

var _ = Describe("config/default", func() {
	It("renders with kubectl kustomize and applies cleanly", func(ctx SpecContext) {
		root := testenv.RepoRoot()
		r := kc.run(ctx, "", "", "kustomize", filepath.Join(root, "config", "default"))
		Expect(r.err).NotTo(HaveOccurred(), "kubectl kustomize config/default:\n%s", r.stderr)
		Expect(r.stderr).To(BeEmpty(), "kustomize warnings")
		objs := decodeDocuments([]byte(r.stdout))
		byKind := map[string][]*unstructured.Unstructured{}
		for _, o := range objs {
			byKind[o.GetKind()] = append(byKind[o.GetKind()], o)
			if o.GetKind() != "Namespace" && o.GetKind() != "CustomResourceDefinition" && !strings.HasPrefix(o.GetKind(), "Cluster") {
				Expect(o.GetNamespace()).To(Equal(deployNamespace), "%s %s", o.GetKind(), o.GetName())
			}
		}

		By("every generated CRD is deployed")
		bases, err := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(byKind["CustomResourceDefinition"]).To(HaveLen(len(bases)), "config/crd/kustomization.yaml must list every file of config/crd/bases")
		var plurals []string
		for _, o := range byKind["CustomResourceDefinition"] {
			crd := convert[apiextensionsv1.CustomResourceDefinition](o)
			Expect(crd.Spec.Names.Categories).To(ContainElement("infrastate"), crd.Name)
			plurals = append(plurals, crd.Spec.Names.Plural)
		}

		By("the manager's ClusterRole covers every kind and its status")
		managerRole := find(byKind["ClusterRole"], "backend-operator-manager-role")
		role := convert[rbacv1.ClusterRole](managerRole)
		for _, plural := range plurals {
			Expect(allows(role.Rules, "backends.infrastate.io", plural, "watch")).To(BeTrue(), plural)
			Expect(allows(role.Rules, "backends.infrastate.io", plural+"/status", "patch")).To(BeTrue(), plural+"/status")
		}

		By("the Deployment: image, leader election, probes, resources, non-root, read-only root filesystem")
		Expect(byKind["Deployment"]).To(HaveLen(1))
		deploy := convert[appsv1.Deployment](byKind["Deployment"][0])
		pod := deploy.Spec.Template.Spec
		Expect(pod.ServiceAccountName).To(Equal(find(byKind["ServiceAccount"], "backend-operator-controller-manager").GetName()))
		Expect(pod.SecurityContext.RunAsNonRoot).To(HaveValue(BeTrue()))
		Expect(pod.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
		Expect(pod.Containers).To(HaveLen(1))
		c := pod.Containers[0]
		Expect(c.Image).To(HavePrefix("ghcr.io/infrastate/backend-operator:"))
		Expect(c.Args).To(ContainElements("--leader-elect", "--health-probe-bind-address=:8081"))
		Expect(c.LivenessProbe.HTTPGet.Path).To(Equal("/healthz"))
		Expect(c.ReadinessProbe.HTTPGet.Path).To(Equal("/readyz"))
		for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			Expect(c.Resources.Requests).To(HaveKey(res))
			Expect(c.Resources.Limits).To(HaveKey(res))
		}
		Expect(c.SecurityContext.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()))
		Expect(c.SecurityContext.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
		Expect(c.SecurityContext.Capabilities.Drop).To(ContainElement(corev1.Capability("ALL")))
		leaderRole := convert[rbacv1.Role](find(byKind["Role"], "backend-operator-leader-election-role"))
		Expect(allows(leaderRole.Rules, "coordination.k8s.io", "leases", "update")).To(BeTrue())

		By("the API server accepts it, and Pod Security (restricted) has nothing to say")
		manifest := filepath.Join(GinkgoT().TempDir(), "default.yaml")
		Expect(os.WriteFile(manifest, []byte(r.stdout), 0o600)).To(Succeed())
		applied := kc.run(ctx, "", "", "apply", "--server-side", "--force-conflicts", "-f", manifest)
		Expect(applied.err).NotTo(HaveOccurred(), applied.stderr)
		Expect(applied.stderr).NotTo(ContainSubstring("Warning"))
		Expect(kc.jsonpath(ctx, "", "namespace/"+deployNamespace, "{.metadata.labels.pod-security\\.kubernetes\\.io/warn}")).To(Equal("restricted"))
	})
})

// convert turns an unstructured object into a typed one.
func convert[T any](obj *unstructured.Unstructured) *T {
	out := new(T)
	ExpectWithOffset(1, runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, out)).To(Succeed())
	return out
}

// find returns the object called name.
func find(objs []*unstructured.Unstructured, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetName() == name {
			return o
		}
	}
	Fail("no object called " + name)
	return nil
}

// allows reports whether rules grant verb on group/resource.
func allows(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	for _, r := range rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && (slices.Contains(r.Verbs, verb) || slices.Contains(r.Verbs, "*")) {
			return true
		}
	}
	return false
}
