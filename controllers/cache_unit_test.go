package controllers

import (
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/contenthash"
)

// TestCacheTransform checks what the manager's cache keeps of an object:
// no managed fields and no kubectl last-applied copy, but its other
// annotations (a StateLock's reacquire annotation is read); of a backend,
// no label or annotation at all; of metadata, only the content hash and
// stored size annotations.
func TestCacheTransform(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	cases := map[string]struct {
		in, want any
	}{
		"a backend applied with kubectl": {
			in: &backendsv1alpha1.HttpBackend{ObjectMeta: metav1.ObjectMeta{Name: "app", ManagedFields: managed, Annotations: map[string]string{
				lastAppliedAnnotation: `{"spec":{"address":"https://state.example.com"}}`, "team": "a",
			}, Labels: map[string]string{"app.kubernetes.io/instance": "app"}}},
			want: &backendsv1alpha1.HttpBackend{ObjectMeta: metav1.ObjectMeta{Name: "app"}},
		},
		"a COS backend applied with kubectl": {
			in: &backendsv1alpha1.CosBackend{ObjectMeta: metav1.ObjectMeta{Name: "app", ManagedFields: managed, Annotations: map[string]string{
				lastAppliedAnnotation: `{"spec":{"bucket":"b"}}`, "team": "a",
			}, Labels: map[string]string{"team": "a"}}},
			want: &backendsv1alpha1.CosBackend{ObjectMeta: metav1.ObjectMeta{Name: "app"}},
		},
		"a backend without annotations": {
			in:   &backendsv1alpha1.HttpBackend{ObjectMeta: metav1.ObjectMeta{Name: "app"}},
			want: &backendsv1alpha1.HttpBackend{ObjectMeta: metav1.ObjectMeta{Name: "app"}},
		},
		"a StateLock applied with kubectl": {
			in: &backendsv1alpha1.StateLock{ObjectMeta: metav1.ObjectMeta{Name: "lock", ManagedFields: managed, Annotations: map[string]string{
				lastAppliedAnnotation: `{"spec":{}}`, backendsv1alpha1.ReacquireAnnotation: "1",
			}, Labels: map[string]string{"team": "a"}}},
			want: &backendsv1alpha1.StateLock{ObjectMeta: metav1.ObjectMeta{Name: "lock", Annotations: map[string]string{
				backendsv1alpha1.ReacquireAnnotation: "1",
			}, Labels: map[string]string{"team": "a"}}},
		},
		"metadata of a Secret": {
			in: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "s", ManagedFields: managed, Annotations: map[string]string{
				lastAppliedAnnotation: `{"data":{"password":"x"}}`, contenthash.Annotation: "sha256:1", contenthash.StoredBytesAnnotation: "9", "team": "a",
			}}},
			want: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "s", Annotations: map[string]string{
				contenthash.Annotation: "sha256:1", contenthash.StoredBytesAnnotation: "9",
			}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := cacheTransform()(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("kept (-want +got):\n%s", diff)
			}
		})
	}
}

// cachedHTTPBackend is an HttpBackend with every field the reconcilers
// read or write set, as decoding leaves it: each string a copy of its own,
// and slices with room at their ends.
func cachedHTTPBackend(name string) *backendsv1alpha1.HttpBackend {
	decoded := strings.Clone
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	conds := make([]metav1.Condition, 0, 4)
	for _, c := range []metav1.Condition{
		{Type: backendsv1alpha1.LockedCondition, Status: metav1.ConditionUnknown, Reason: backendsv1alpha1.LockNotCheckedReason, Message: "The lock is not checked"},
		{Type: backendsv1alpha1.StateReachableCondition, Status: metav1.ConditionTrue, Reason: backendsv1alpha1.ReachableReason, Message: "The backend answers; it holds no state yet"},
		{Type: backendsv1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "Rendered ConfigMap " + name + "-backend"},
	} {
		conds = append(conds, metav1.Condition{Type: decoded(c.Type), Status: metav1.ConditionStatus(decoded(string(c.Status))),
			Reason: decoded(c.Reason), Message: decoded(c.Message), ObservedGeneration: 2, LastTransitionTime: now})
	}
	runners := make([]backendsv1alpha1.CompatibleRunner, 0, 4)
	runners = append(runners, backendsv1alpha1.CompatibleRunner{Flavor: backendsv1alpha1.RunnerFlavor(decoded("terraform")), Versions: decoded(">= 1.0.0")})
	return &backendsv1alpha1.HttpBackend{
		TypeMeta: metav1.TypeMeta{APIVersion: decoded(backendsv1alpha1.GroupVersion.String()), Kind: decoded(backendsv1alpha1.HttpBackendKind)},
		ObjectMeta: metav1.ObjectMeta{Namespace: decoded("team-a"), Name: name, UID: "u-" + "1", ResourceVersion: "7", Generation: 2,
			CreationTimestamp: now, Finalizers: []string{decoded("backends.infrastate.io/finalizer")}},
		Spec: backendsv1alpha1.HttpBackendSpec{
			Address: "https://state.example.com/" + name, UpdateMethod: decoded("POST"), LockAddress: "https://state.example.com/lock",
			LockMethod: decoded("LOCK"), UnlockAddress: "https://state.example.com/lock", UnlockMethod: decoded("UNLOCK"), Username: decoded("user"),
			PasswordSecretRef: &backendsv1alpha1.SecretKeyRef{Name: name + "-password", Key: decoded("password")},
		},
		Status: backendsv1alpha1.HttpBackendStatus{BackendStatus: backendsv1alpha1.BackendStatus{
			Conditions: conds, ObservedGeneration: 2, Locked: decoded("Unchecked"),
			Rendered: &backendsv1alpha1.RenderedObjects{ConfigMapName: name + "-backend", SecretName: name + "-backend-credentials", CompatibleRunners: runners},
			State:    &backendsv1alpha1.StateSummary{Present: true, Serial: 3, Lineage: "l", SizeBytes: 10},
			Lock:     &backendsv1alpha1.LockInfo{ID: "id", Who: "w", Created: &now},
		}, Server: &backendsv1alpha1.ServerBehaviour{LocksExclusive: true, ConflictStatus: 409}},
	}
}

// TestCacheTransformKeepsWhatIsRead checks that the transform changes
// nothing of a backend the reconcilers read or write: its spec, status and
// metadata but labels, annotations and managed fields, which no reconciler
// reads and the status patch never sends.
func TestCacheTransformKeepsWhatIsRead(t *testing.T) {
	in := cachedHTTPBackend("web")
	in.Labels = map[string]string{"app": "web"}
	in.Annotations = map[string]string{"note": "x"}
	in.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	want := cachedHTTPBackend("web")

	got, err := cacheTransform()(in)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
	conds := got.(*backendsv1alpha1.HttpBackend).Status.Conditions
	if cap(conds) != len(conds) {
		t.Errorf("conditions keep room for %d, want none", cap(conds)-len(conds))
	}
}

// TestCacheTransformSharesStrings checks that two cached backends share
// the strings they repeat, and keep those of their own.
func TestCacheTransformSharesStrings(t *testing.T) {
	transform := cacheTransform()
	var backends []*backendsv1alpha1.HttpBackend
	for _, name := range []string{"web", "api"} {
		out, err := transform(cachedHTTPBackend(name))
		if err != nil {
			t.Fatal(err)
		}
		backends = append(backends, out.(*backendsv1alpha1.HttpBackend))
	}
	web, api := backends[0], backends[1]
	same := func(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }
	shared := map[string][2]string{
		"apiVersion":      {web.APIVersion, api.APIVersion},
		"kind":            {web.Kind, api.Kind},
		"namespace":       {web.Namespace, api.Namespace},
		"finalizer":       {web.Finalizers[0], api.Finalizers[0]},
		"condition type":  {web.Status.Conditions[0].Type, api.Status.Conditions[0].Type},
		"status":          {string(web.Status.Conditions[1].Status), string(api.Status.Conditions[1].Status)},
		"reason":          {web.Status.Conditions[0].Reason, api.Status.Conditions[0].Reason},
		"message":         {web.Status.Conditions[1].Message, api.Status.Conditions[1].Message},
		"locked":          {web.Status.Locked, api.Status.Locked},
		"runner flavor":   {string(web.Status.Rendered.CompatibleRunners[0].Flavor), string(api.Status.Rendered.CompatibleRunners[0].Flavor)},
		"runner versions": {web.Status.Rendered.CompatibleRunners[0].Versions, api.Status.Rendered.CompatibleRunners[0].Versions},
		"method":          {web.Spec.LockMethod, api.Spec.LockMethod},
		"username":        {web.Spec.Username, api.Spec.Username},
		"password key":    {web.Spec.PasswordSecretRef.Key, api.Spec.PasswordSecretRef.Key},
	}
	for field, pair := range shared {
		if !same(pair[0], pair[1]) {
			t.Errorf("%s %q: each backend holds a copy of its own", field, pair[0])
		}
	}
	if web.Status.Conditions[2].Message == api.Status.Conditions[2].Message {
		t.Errorf("the Ready messages should differ: %q", web.Status.Conditions[2].Message)
	}
}
