package owned

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/internal/contenthash"
	"github.com/infrastate/backend-operator/internal/render"
	"github.com/infrastate/backend-operator/internal/testenv"
)

// ownedTestOwner controls the objects of the Writer tests.
var ownedTestOwner = render.Owner{APIVersion: "backends.infrastate.io/v1alpha1", Kind: "HttpBackend", Name: "app", Namespace: "ns", UID: "owner-uid"}

// ownedTestWriter is ownedTestOwner as Versions knows it.
var ownedTestWriter = WriterKey{Kind: "HttpBackend", NamespacedName: types.NamespacedName{Namespace: "ns", Name: "app"}}

// recordStored, as the version a writer checked last, stands for the
// version of the object stored.
const recordStored = "stored"

// ownedTestLabels are the labels the operator renders.
var ownedTestLabels = map[string]string{render.ManagedByLabel: render.ManagedByValue}

// ownedWrite is one write that reached the API server.
type ownedWrite struct {
	verb         string // "create" or "patch"
	fieldManager string
	patch        string // the patch body, for a patch
}

// ownedHarness is an Writer on a fake API server, recording what it
// reads and writes.
type ownedHarness struct {
	store      client.WithWatch // the API server
	writer     Writer
	reads      int // full reads through writer.reader
	metaReads  int // metadata reads through writer.metadata
	writes     []ownedWrite
	createErr  error                                  // the API server's answer to a create, when set
	patchErr   error                                  // the same for a patch
	afterRead  func(store client.WithWatch)           // runs after each full read
	metaFilter func(key client.ObjectKey) (hide bool) // hides objects from the cache
}

// newOwnedHarness starts an ownedHarness holding objs. The manager's
// client (writer.client) fails any read: the content of a ConfigMap or a
// Secret must come from the API server through writer.reader.
// expectStoredData checks that the stored ConfigMap app-backend holds
// want, or that none is stored when want is nil, and returns it (nil when
// none is).
func (h *ownedHarness) expectStoredData(t *testing.T, want map[string]string) *corev1.ConfigMap {
	t.Helper()
	got := &corev1.ConfigMap{}
	err := h.store.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "app-backend"}, got)
	if want == nil {
		if !apierrors.IsNotFound(err) {
			t.Errorf("the ConfigMap exists (%v), want none", err)
		}
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got.Data); diff != "" {
		t.Errorf("stored data (-want +got):\n%s", diff)
	}
	return got
}

func newOwnedHarness(t *testing.T, objs ...client.Object) *ownedHarness {
	t.Helper()
	h := &ownedHarness{}
	byName := func(obj client.Object) []string { return []string{obj.GetName()} }
	h.store = fake.NewClientBuilder().WithScheme(testenv.Scheme()).WithObjects(objs...).
		WithIndex(&corev1.ConfigMap{}, "metadata.name", byName).WithIndex(&corev1.Secret{}, "metadata.name", byName).Build()
	writes := interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			t.Error("ownedWriter read through the manager's client instead of the API server")
			return errors.New("read through the manager's client")
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			o := &client.CreateOptions{}
			o.ApplyOptions(opts)
			h.writes = append(h.writes, ownedWrite{verb: "create", fieldManager: o.FieldManager})
			if h.createErr != nil {
				return h.createErr
			}
			return c.Create(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			o := &client.PatchOptions{}
			o.ApplyOptions(opts)
			data, err := patch.Data(obj)
			if err != nil {
				return err
			}
			h.writes = append(h.writes, ownedWrite{verb: "patch", fieldManager: o.FieldManager, patch: string(data)})
			if h.patchErr != nil {
				return h.patchErr
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	}
	reader := interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		h.reads++
		err := c.Get(ctx, key, obj, opts...)
		if err == nil && h.afterRead != nil {
			h.afterRead(c)
		}
		return err
	}}
	metadata := interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if _, ok := obj.(*metav1.PartialObjectMetadata); !ok {
			t.Errorf("the metadata reader was asked for a %T", obj)
		}
		h.metaReads++
		if h.metaFilter != nil && h.metaFilter(key) {
			return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, key.Name)
		}
		return c.Get(ctx, key, obj, opts...)
	}}
	h.writer = Writer{
		Client:   interceptor.NewClient(h.store, writes),
		Reader:   interceptor.NewClient(h.store, reader),
		Metadata: interceptor.NewClient(h.store, metadata),
		Versions: NewVersions(),
	}
	return h
}

// ownedConfigMap is the ConfigMap app-backend with data, controlled by
// owner (nil: by nobody), with the content-hash annotation hash (empty:
// none) and labels.
func ownedConfigMap(owner *render.Owner, data map[string]string, hash string, labels map[string]string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-backend", Namespace: "ns", Labels: labels}, Data: data}
	if owner != nil {
		cm.ObjectMeta = render.OwnedObjectMeta(*owner, "app-backend", labels)
	}
	if hash != "" {
		cm.Annotations = map[string]string{contenthash.Annotation: hash}
	}
	return cm
}

// TestApplyConfigMap covers the create-or-patch of Writer: what it
// writes, what it refuses and what it reads.
func TestApplyConfigMap(t *testing.T) {
	desired := map[string]string{"backend.tf": "new"}
	old := map[string]string{"backend.tf": "old"}
	foreign := render.Owner{APIVersion: "v1", Kind: "Other", Name: "other", Namespace: "ns", UID: "other-uid"}
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "app-backend", field.ErrorList{field.TooLong(field.NewPath("data"), "", 1)})
	cases := map[string]struct {
		existing       *corev1.ConfigMap
		hideFromCache  bool
		writtenBefore  bool   // Writer.WrittenBefore
		recorded       string // the version the writer checked last: recordStored for the existing one's
		createErr      error
		patchErr       error
		wantWrote      bool
		wantVerbs      []string
		wantReason     string // of the stall; empty for none
		wantErr        func(error) bool
		wantReads      int
		wantData       map[string]string // stored afterwards
		wantAnnotation string            // stored afterwards
	}{
		"absent: created without a read": {
			wantWrote: true, wantVerbs: []string{"create"},
			wantData: desired, wantAnnotation: contenthash.ConfigMap(desired, nil),
		},
		"as desired: no write": {
			existing:  ownedConfigMap(&ownedTestOwner, desired, contenthash.ConfigMap(desired, nil), ownedTestLabels),
			wantReads: 1, wantData: desired, wantAnnotation: contenthash.ConfigMap(desired, nil),
		},
		"as desired, and the version the operator checked last: neither read nor written": {
			existing: ownedConfigMap(&ownedTestOwner, desired, contenthash.ConfigMap(desired, nil), ownedTestLabels),
			recorded: recordStored,
			wantData: desired, wantAnnotation: contenthash.ConfigMap(desired, nil),
		},
		"as desired, but another version than the one the operator checked last: read": {
			existing:  ownedConfigMap(&ownedTestOwner, desired, contenthash.ConfigMap(desired, nil), ownedTestLabels),
			recorded:  "1",
			wantReads: 1, wantData: desired, wantAnnotation: contenthash.ConfigMap(desired, nil),
		},
		"changed by another writer under the annotation the operator wrote: read and ExternallyModified": {
			existing:   ownedConfigMap(&ownedTestOwner, map[string]string{"ca.crt": "theirs"}, contenthash.ConfigMap(desired, nil), ownedTestLabels),
			recorded:   "1",
			wantReason: backendsv1alpha1.ExternallyModifiedReason, wantReads: 1,
			wantData: map[string]string{"ca.crt": "theirs"}, wantAnnotation: contenthash.ConfigMap(desired, nil),
		},
		"the version checked last, but a label missing: read and patched": {
			existing:  ownedConfigMap(&ownedTestOwner, desired, contenthash.ConfigMap(desired, nil), nil),
			recorded:  recordStored,
			wantWrote: true, wantVerbs: []string{"patch"}, wantReads: 1,
			wantData: desired, wantAnnotation: contenthash.ConfigMap(desired, nil),
		},
		"written once but deleted since: read, and created again": {
			recorded:  "1",
			wantWrote: true, wantVerbs: []string{"create"}, wantReads: 1,
			wantData: desired, wantAnnotation: contenthash.ConfigMap(desired, nil),
		},
		"absent from the cache, but someone else's: NameConflict without reading its content": {
			existing:      ownedConfigMap(nil, old, "", nil),
			hideFromCache: true,
			wantVerbs:     []string{"create"},
			wantReason:    backendsv1alpha1.NameConflictReason,
			wantData:      old,
		},
		"absent from the cache, as desired, its owner's status naming it (moved in from another shard): read, not created": {
			existing:      ownedConfigMap(&ownedTestOwner, desired, contenthash.ConfigMap(desired, nil), ownedTestLabels),
			hideFromCache: true, writtenBefore: true,
			wantReads: 1, wantData: desired, wantAnnotation: contenthash.ConfigMap(desired, nil),
		},
		"absent, its owner's status naming it: read, then created": {
			writtenBefore: true,
			wantWrote:     true, wantVerbs: []string{"create"}, wantReads: 1,
			wantData: desired, wantAnnotation: contenthash.ConfigMap(desired, nil),
		},
		"absent from the cache, someone else's, its owner's status naming it: NameConflict, nothing created": {
			existing:      ownedConfigMap(nil, old, "", nil),
			hideFromCache: true, writtenBefore: true,
			wantReason: backendsv1alpha1.NameConflictReason,
			wantData:   old,
		},
		"as desired but the annotation removed: no write": {
			existing:  ownedConfigMap(&ownedTestOwner, desired, "", ownedTestLabels),
			wantReads: 1, wantData: desired,
		},
		"written by the operator, now stale: patched": {
			existing:  ownedConfigMap(&ownedTestOwner, old, contenthash.ConfigMap(old, nil), ownedTestLabels),
			wantWrote: true, wantVerbs: []string{"patch"}, wantReads: 1,
			wantData: desired, wantAnnotation: contenthash.ConfigMap(desired, nil),
		},
		"as desired but a label missing: patched": {
			existing:  ownedConfigMap(&ownedTestOwner, desired, contenthash.ConfigMap(desired, nil), nil),
			wantWrote: true, wantVerbs: []string{"patch"}, wantReads: 1,
			wantData: desired, wantAnnotation: contenthash.ConfigMap(desired, nil),
		},
		"without the annotation: adopted": {
			existing:  ownedConfigMap(&ownedTestOwner, old, "", ownedTestLabels),
			wantWrote: true, wantVerbs: []string{"patch"}, wantReads: 1,
			wantData: desired, wantAnnotation: contenthash.ConfigMap(desired, nil),
		},
		"changed by another writer: ExternallyModified": {
			existing:   ownedConfigMap(&ownedTestOwner, map[string]string{"ca.crt": "theirs"}, contenthash.ConfigMap(old, nil), ownedTestLabels),
			wantReason: backendsv1alpha1.ExternallyModifiedReason, wantReads: 1,
			wantData: map[string]string{"ca.crt": "theirs"}, wantAnnotation: contenthash.ConfigMap(old, nil),
		},
		"foreign, in the cache: NameConflict without reading its content": {
			existing:   ownedConfigMap(&foreign, old, "", nil),
			wantReason: backendsv1alpha1.NameConflictReason,
			wantData:   old,
		},
		"create refused as too large: WriteRejected": {
			createErr:  apierrors.NewRequestEntityTooLargeError("limit is 3145728"),
			wantVerbs:  []string{"create"},
			wantReason: backendsv1alpha1.WriteRejectedReason,
		},
		"patch refused as invalid: WriteRejected": {
			existing:   ownedConfigMap(&ownedTestOwner, old, contenthash.ConfigMap(old, nil), ownedTestLabels),
			patchErr:   invalid,
			wantVerbs:  []string{"patch"},
			wantReason: backendsv1alpha1.WriteRejectedReason, wantReads: 1,
			wantData: old, wantAnnotation: contenthash.ConfigMap(old, nil),
		},
		"patch failing otherwise: an error to retry": {
			existing:  ownedConfigMap(&ownedTestOwner, old, contenthash.ConfigMap(old, nil), ownedTestLabels),
			patchErr:  apierrors.NewServiceUnavailable("try again"),
			wantVerbs: []string{"patch"},
			wantErr:   apierrors.IsServiceUnavailable, wantReads: 1,
			wantData: old, wantAnnotation: contenthash.ConfigMap(old, nil),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var objs []client.Object
			if tc.existing != nil {
				objs = append(objs, tc.existing)
			}
			h := newOwnedHarness(t, objs...)
			h.createErr, h.patchErr = tc.createErr, tc.patchErr
			h.writer.WrittenBefore = tc.writtenBefore
			if tc.hideFromCache {
				h.metaFilter = func(client.ObjectKey) bool { return true }
			}
			want := &corev1.ConfigMap{ObjectMeta: render.OwnedObjectMeta(ownedTestOwner, "app-backend", ownedTestLabels), Data: desired}
			if recorded := tc.recorded; recorded != "" {
				if recorded == recordStored {
					stored := &corev1.ConfigMap{}
					if err := h.store.Get(context.Background(), client.ObjectKeyFromObject(want), stored); err != nil {
						t.Fatal(err)
					}
					recorded = stored.ResourceVersion
				}
				h.writer.Versions.set(ownedTestWriter, writtenKey{kind: "ConfigMap", name: "app-backend"}, recorded)
			}

			wrote, err := h.writer.ApplyConfigMap(context.Background(), want)
			checkOwnedError(t, err, tc.wantReason, tc.wantErr)
			if wrote != tc.wantWrote {
				t.Errorf("applyConfigMap() wrote = %t, want %t", wrote, tc.wantWrote)
			}
			var verbs []string
			for _, w := range h.writes {
				verbs = append(verbs, w.verb)
				if w.fieldManager != string(FieldOwner) {
					t.Errorf("a %s as field manager %q, want %q", w.verb, w.fieldManager, FieldOwner)
				}
			}
			if diff := cmp.Diff(tc.wantVerbs, verbs); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
			if h.metaReads != 1 || h.reads != tc.wantReads {
				t.Errorf("read the metadata %d times and the content %d times, want 1 and %d", h.metaReads, h.reads, tc.wantReads)
			}

			got := h.expectStoredData(t, tc.wantData)
			if got == nil {
				return
			}
			if a := got.Annotations[contenthash.Annotation]; a != tc.wantAnnotation {
				t.Errorf("stored %s = %q, want %q", contenthash.Annotation, a, tc.wantAnnotation)
			}
			if tc.wantWrote && !controlledBy(got, metav1.GetControllerOf(want)) {
				t.Errorf("the written ConfigMap is not controlled by its owner: %v", got.OwnerReferences)
			}
		})
	}
}

// checkOwnedError checks a stall reason (empty: no stall) and, when the
// predicate is not nil, that err satisfies it; with neither, err must be
// nil.
func checkOwnedError(t *testing.T, err error, reason string, is func(error) bool) {
	t.Helper()
	se, stalled := conditions.AsStall(err)
	switch {
	case reason != "" && (!stalled || se.Reason != reason):
		t.Fatalf("error %v, want a stall with reason %s", err, reason)
	case reason == "" && stalled:
		t.Fatalf("error %v is a stall (%s), want none", err, se.Reason)
	case is != nil && (err == nil || !is(err)):
		t.Fatalf("error %v does not match", err)
	case reason == "" && is == nil && err != nil:
		t.Fatalf("unexpected error: %v", err)
	}
}

// TestApplyPatchIsLocked checks that a patch carries the resourceVersion
// read, and that a write by someone else between the read and the patch
// makes it a conflict instead of being overwritten.
func TestApplyPatchIsLocked(t *testing.T) {
	old := map[string]string{"backend.tf": "old"}
	desired := &corev1.ConfigMap{ObjectMeta: render.OwnedObjectMeta(ownedTestOwner, "app-backend", ownedTestLabels), Data: map[string]string{"backend.tf": "new"}}
	key := client.ObjectKeyFromObject(desired)

	t.Run("the patch names the version read", func(t *testing.T) {
		h := newOwnedHarness(t, ownedConfigMap(&ownedTestOwner, old, contenthash.ConfigMap(old, nil), ownedTestLabels))
		read := &corev1.ConfigMap{}
		if err := h.store.Get(context.Background(), key, read); err != nil {
			t.Fatal(err)
		}
		if _, err := h.writer.ApplyConfigMap(context.Background(), desired.DeepCopy()); err != nil {
			t.Fatal(err)
		}
		if len(h.writes) != 1 || !strings.Contains(h.writes[0].patch, `"resourceVersion":"`+read.ResourceVersion+`"`) {
			t.Errorf("writes = %+v, want one patch with resourceVersion %s", h.writes, read.ResourceVersion)
		}
	})

	t.Run("a write since the read conflicts", func(t *testing.T) {
		h := newOwnedHarness(t, ownedConfigMap(&ownedTestOwner, old, contenthash.ConfigMap(old, nil), ownedTestLabels))
		h.afterRead = func(store client.WithWatch) {
			h.afterRead = nil
			theirs := &corev1.ConfigMap{}
			if err := store.Get(context.Background(), key, theirs); err != nil {
				t.Fatal(err)
			}
			theirs.Data = map[string]string{"ca.crt": "theirs"}
			if err := store.Update(context.Background(), theirs); err != nil {
				t.Fatal(err)
			}
		}
		_, err := h.writer.ApplyConfigMap(context.Background(), desired.DeepCopy())
		checkOwnedError(t, err, "", apierrors.IsConflict)
		got := &corev1.ConfigMap{}
		if err := h.store.Get(context.Background(), key, got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[string]string{"ca.crt": "theirs"}, got.Data); diff != "" {
			t.Errorf("the other writer's data was overwritten (-want +got):\n%s", diff)
		}

		// The retry reads again and sees the other writer.
		_, err = h.writer.ApplyConfigMap(context.Background(), desired.DeepCopy())
		if se, ok := conditions.AsStall(err); !ok || se.Reason != backendsv1alpha1.ExternallyModifiedReason {
			t.Errorf("the retry: error %v, want ExternallyModified", err)
		}
	})
}

// TestApplySecret checks the Secret flavour: created with its type, hashed
// over its data, left alone when unchanged.
func TestApplySecret(t *testing.T) {
	h := newOwnedHarness(t)
	desired := func(password string) *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: render.OwnedObjectMeta(ownedTestOwner, "app-backend-credentials", ownedTestLabels),
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{"TF_HTTP_PASSWORD": []byte(password)},
		}
	}
	steps := []struct {
		password  string
		wantWrote bool
	}{{"one", true}, {"one", false}, {"two", true}}
	for i, step := range steps {
		wrote, err := h.writer.ApplySecret(context.Background(), desired(step.password))
		if err != nil || wrote != step.wantWrote {
			t.Fatalf("step %d: applySecret() = %t, %v; want %t, nil", i, wrote, err, step.wantWrote)
		}
	}
	got := &corev1.Secret{}
	if err := h.store.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "app-backend-credentials"}, got); err != nil {
		t.Fatal(err)
	}
	want := desired("two").Data
	if diff := cmp.Diff(want, got.Data); diff != "" {
		t.Errorf("stored data (-want +got):\n%s", diff)
	}
	if got.Type != corev1.SecretTypeOpaque || got.Annotations[contenthash.Annotation] != contenthash.Secret(want) {
		t.Errorf("stored type %q and hash %q, want %q and %q", got.Type, got.Annotations[contenthash.Annotation], corev1.SecretTypeOpaque, contenthash.Secret(want))
	}
	if n := len(h.writes); n != 2 {
		t.Errorf("%d writes, want 2", n)
	}
}
