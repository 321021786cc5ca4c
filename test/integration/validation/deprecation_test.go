package validation

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var _ = Describe("RemoteState spec.interval, deprecated", func() {
	// A RemoteState created before the deprecation holds the interval the
	// CRD filled in, which a GitOps tool applying a manifest that never set
	// it does not remove: setting probe.interval alone must be accepted
	// (the controller then reads probe.interval, see EffectiveProbe).
	It("moves to probe.interval by setting it alone, beside the interval an earlier CRD filled in", func(ctx context.Context) {
		obj := remoteState(set("spec.interval", "5m"))
		obj.SetNamespace(newNamespace(ctx))
		Expect(k8sClient.Create(ctx, obj)).To(Succeed())

		Expect(k8sClient.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"probe":{"interval":"10m"}}}`)))).To(Succeed())

		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(obj.GroupVersionKind())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
		Expect(got.Object["spec"]).To(HaveKeyWithValue("interval", "5m"))
		Expect(got.Object["spec"]).To(HaveKeyWithValue("probe", map[string]any{"interval": "10m"}))
	}, SpecTimeout(time.Minute))
})
