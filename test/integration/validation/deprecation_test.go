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
	// CRD filled in; docs/upgrading.md says how to move it to
	// probe.interval.
	It("moves to probe.interval only when interval is removed in the same change", func(ctx context.Context) {
		obj := remoteState(set("spec.interval", "5m"))
		obj.SetNamespace(newNamespace(ctx))
		Expect(k8sClient.Create(ctx, obj)).To(Succeed())

		patch := func(body string) error {
			return k8sClient.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(body)))
		}
		Expect(patch(`{"spec":{"probe":{"interval":"10m"}}}`)).To(beInvalid("spec.interval",
			"interval is deprecated and cannot be set together with probe.interval"))
		Expect(patch(`{"spec":{"interval":null,"probe":{"interval":"10m"}}}`)).To(Succeed())

		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(obj.GroupVersionKind())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
		Expect(got.Object["spec"]).NotTo(HaveKey("interval"))
		Expect(got.Object["spec"]).To(HaveKeyWithValue("probe", map[string]any{"interval": "10m"}))
	}, SpecTimeout(time.Minute))
})
