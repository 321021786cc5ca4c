package owned

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/budget"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/internal/contenthash"
	"github.com/infrastate/backend-operator/internal/render"
)

// TestObjectBytes checks that sizes are counted as the API server counts
// data: keys and values, of every data field.
func TestObjectBytes(t *testing.T) {
	cases := map[string]struct {
		obj  client.Object
		want int64
	}{
		"an empty ConfigMap": {obj: &corev1.ConfigMap{}, want: 0},
		"a ConfigMap's data and binaryData": {
			obj:  &corev1.ConfigMap{Data: map[string]string{"a": "xyz", "bb": ""}, BinaryData: map[string][]byte{"c": {1, 2}}},
			want: 1 + 3 + 2 + 1 + 2,
		},
		"a Secret's data and stringData": {
			obj:  &corev1.Secret{Data: map[string][]byte{"password": []byte("12345")}, StringData: map[string]string{"k": "v"}},
			want: 8 + 5 + 1 + 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got int64
			switch o := tc.obj.(type) {
			case *corev1.ConfigMap:
				got = ConfigMapBytes(o)
			case *corev1.Secret:
				got = SecretBytes(o)
			}
			if got != tc.want {
				t.Errorf("size %d, want %d", got, tc.want)
			}
		})
	}
}

// TestApplyWithinBudget checks the writes of a Writer with a Ledger: each
// object records its size, a write that grows beyond the share is refused
// before anything is sent and leaves the object as it was, and a write
// that shrinks always passes.
func TestApplyWithinBudget(t *testing.T) {
	data := func(n int) map[string]string { return map[string]string{"backend.tf": strings.Repeat("x", n)} }
	cases := map[string]struct {
		existing   *corev1.ConfigMap
		desired    map[string]string
		stored     int64 // the namespace's use before, learned from a watch
		wantReason string
		wantVerbs  []string
		wantData   map[string]string
		wantUsed   int64
	}{
		"a create within the share": {
			desired: data(40), wantVerbs: []string{"create"}, wantData: data(40), wantUsed: 50,
		},
		"a create beyond the share: refused, nothing sent": {
			desired: data(100), wantReason: backendsv1alpha1.BudgetExceededReason,
		},
		"a patch that grows beyond the share: refused, the object as it was": {
			existing: ownedConfigMap(&ownedTestOwner, data(40), contenthash.ConfigMap(data(40), nil), ownedTestLabels),
			stored:   50, desired: data(95),
			wantReason: backendsv1alpha1.BudgetExceededReason, wantData: data(40), wantUsed: 50,
		},
		"a patch that grows within the share": {
			existing: ownedConfigMap(&ownedTestOwner, data(40), contenthash.ConfigMap(data(40), nil), ownedTestLabels),
			stored:   50, desired: data(80),
			wantVerbs: []string{"patch"}, wantData: data(80), wantUsed: 90,
		},
		"a patch that shrinks, the namespace beyond its share: written": {
			existing: ownedConfigMap(&ownedTestOwner, data(140), contenthash.ConfigMap(data(140), nil), ownedTestLabels),
			stored:   150, desired: data(20),
			wantVerbs: []string{"patch"}, wantData: data(20), wantUsed: 30,
		},
		"as desired, the namespace beyond its share: nothing to write, nothing refused": {
			existing: ownedConfigMap(&ownedTestOwner, data(140), contenthash.ConfigMap(data(140), nil), ownedTestLabels),
			stored:   150, desired: data(140),
			wantData: data(140), wantUsed: 150,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var objs []client.Object
			if tc.existing != nil {
				objs = append(objs, tc.existing)
			}
			h := newOwnedHarness(t, objs...)
			shares := budget.New(budget.Config{Name: "API storage", Unit: budget.Bytes, PerNamespace: 100, PerNamespaceFlag: "api-storage-per-namespace"},
				clocktesting.NewFakePassiveClock(time.Unix(0, 0)))
			h.writer.Ledger = NewLedger(shares)
			if tc.stored > 0 {
				h.writer.Ledger.Observe("ConfigMap", writtenMeta("ns", "app-backend", "u", tc.stored), false)
			}
			desired := &corev1.ConfigMap{ObjectMeta: render.OwnedObjectMeta(ownedTestOwner, "app-backend", ownedTestLabels), Data: tc.desired}
			_, err := h.writer.ApplyConfigMap(context.Background(), desired)
			checkOwnedError(t, err, tc.wantReason, nil)
			if tc.wantReason != "" {
				for _, part := range []string{"ConfigMap ns/app-backend was not written", "namespace ns has used its API storage share",
					"spec.outputs", "raise --api-storage-per-namespace"} {
					if !strings.Contains(err.Error(), part) {
						t.Errorf("message %q does not say %q", err, part)
					}
				}
			}
			var verbs []string
			for _, w := range h.writes {
				verbs = append(verbs, w.verb)
			}
			if diff := cmp.Diff(tc.wantVerbs, verbs); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
			if got := shares.Used("ns"); got != tc.wantUsed {
				t.Errorf("the namespace uses %d bytes, want %d", got, tc.wantUsed)
			}
			got := h.expectStoredData(t, tc.wantData)
			if got == nil {
				return
			}
			if len(tc.wantVerbs) > 0 {
				if size, counted := storedBytes(got); !counted || size != ConfigMapBytes(got) {
					t.Errorf("%s = %q, want the data's size, %d", contenthash.StoredBytesAnnotation, got.Annotations[contenthash.StoredBytesAnnotation], ConfigMapBytes(got))
				}
			}
		})
	}
}

// TestFitRefusesTogether checks that Writer.Fit refuses objects that fit
// one by one but not together, naming both, and lets them through once
// they fit.
func TestFitRefusesTogether(t *testing.T) {
	h := newOwnedHarness(t)
	h.writer.Ledger = NewLedger(budget.New(budget.Config{Name: "API storage", PerNamespace: 100, PerNamespaceFlag: "api-storage-per-namespace"},
		clocktesting.NewFakePassiveClock(time.Unix(0, 0))))
	secret := &corev1.Secret{ObjectMeta: render.OwnedObjectMeta(ownedTestOwner, "app-outputs", ownedTestLabels),
		Data: map[string][]byte{"token": []byte(strings.Repeat("s", 50))}}
	cm := &corev1.ConfigMap{ObjectMeta: render.OwnedObjectMeta(ownedTestOwner, "app-outputs", ownedTestLabels),
		Data: map[string]string{"vpc": strings.Repeat("c", 50)}}
	err := h.writer.Fit(context.Background(), secret, cm)
	se, ok := conditions.AsStall(err)
	if !ok || se.Reason != backendsv1alpha1.BudgetExceededReason ||
		!strings.Contains(se.Message, "Secret ns/app-outputs and ConfigMap ns/app-outputs were not written") {
		t.Fatalf("Fit of 108 bytes in a share of 100: %v, want a BudgetExceeded stall naming both objects", err)
	}
	cm.Data["vpc"] = "c"
	if err := h.writer.Fit(context.Background(), secret, cm); err != nil {
		t.Errorf("Fit of 63 bytes in a share of 100: %v", err)
	}
	// Written before the stored size annotation existed: not counted, and
	// as desired, so not written again.
	unknown := cm.DeepCopy()
	unknown.Data["vpc"] = strings.Repeat("c", 90)
	unknown.Annotations = map[string]string{contenthash.Annotation: contenthash.ConfigMap(unknown.Data, nil)}
	if err := h.store.Create(context.Background(), unknown); err != nil {
		t.Fatal(err)
	}
	if err := h.writer.Fit(context.Background(), secret, unknown.DeepCopy()); err != nil {
		t.Errorf("Fit of an object already as desired, uncounted: %v, want it left out", err)
	}
	if len(h.writes) != 0 {
		t.Errorf("Fit wrote %v", h.writes)
	}
}
