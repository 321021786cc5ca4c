package owned

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/controllers/internal/related"
	"github.com/infrastate/backend-operator/internal/contenthash"
)

// Writer creates and updates the objects a backend renders, with
// controllerutil.CreateOrPatch. It reads the current object straight from
// the API server and writes only when the content differs, so a resync
// with nothing new performs no write.
//
// Every object it writes carries contenthash.Annotation, the hash of the
// data it wrote. When an object's data no longer matches that hash,
// another writer changed it: the writer then stops writing it and stalls
// (ExternallyModified) instead of fighting over it, until the object is
// deleted (the next reconcile recreates it) or the spec moves elsewhere.
//
// Every object it writes also carries contenthash.StoredBytesAnnotation,
// the size of its data, and each create, or patch that grows an object,
// first reserves its bytes in Ledger: a write beyond the namespace's API
// storage share, or the total, is refused as a BudgetExceeded stall and
// leaves the object as it was.
type Writer struct {
	Client client.Client
	Reader client.Reader
	// Metadata reads the Metadata of watched objects from the manager's
	// cache (see reconciler).
	Metadata client.Reader
	// Versions are the Versions of the objects as the operator last
	// wrote or checked them.
	Versions *Versions
	// Ledger counts the bytes of the objects written, against the API
	// storage budget; nil counts nothing.
	Ledger *Ledger
	// WrittenBefore says that the owner's status names objects written
	// before, perhaps by another manager: a shard's watches hold only
	// the objects of the owners in its cache, so an owner that just
	// moved in from another shard finds its objects not held. One the
	// watches do not hold is then read from the API server before it is
	// created, instead of created straight away and refused as existing.
	WrittenBefore bool
}

// FieldOwner is the field manager of every write of the operator.
const FieldOwner = client.FieldOwner("backend-operator")

// ApplyConfigMap makes the ConfigMap match desired: data, labels and the
// controller reference. It refuses to touch a ConfigMap another owner
// controls or another writer changed, and reports whether it wrote.
func (w Writer) ApplyConfigMap(ctx context.Context, desired *corev1.ConfigMap) (bool, error) {
	setContentHash(desired, contenthash.ConfigMap(desired.Data, nil))
	size := ConfigMapBytes(desired)
	setStoredBytes(desired, size)
	current := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: desired.Namespace, Name: desired.Name}}
	return w.apply(ctx, "ConfigMap", desired, current, objectContent{
		size:   size,
		hash:   func() string { return contenthash.ConfigMap(current.Data, current.BinaryData) },
		create: func() { *current = *desired.DeepCopy() },
		copyData: func() {
			current.Data = desired.Data
			current.BinaryData = nil
		},
	})
}

// ApplySecret makes the Secret match desired, as applyConfigMap does.
func (w Writer) ApplySecret(ctx context.Context, desired *corev1.Secret) (bool, error) {
	setContentHash(desired, contenthash.Secret(desired.Data))
	size := SecretBytes(desired)
	setStoredBytes(desired, size)
	current := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: desired.Namespace, Name: desired.Name}}
	return w.apply(ctx, "Secret", desired, current, objectContent{
		size:     size,
		hash:     func() string { return contenthash.Secret(current.Data) },
		create:   func() { *current = *desired.DeepCopy() },
		copyData: func() { current.Data = desired.Data },
	})
}

// objectContent is what apply needs to know of the kind it writes, as
// closures over the desired and the current object.
type objectContent struct {
	// size is the desired object's size, as the API server counts it.
	size int64
	// hash returns the hash of the current object's data.
	hash func() string
	// create makes the current object, not found, a copy of the desired
	// one.
	create func()
	// copyData copies the desired data into the current object.
	copyData func()
}

// apply is the shared create-or-patch of applyConfigMap and applySecret.
//
// The watched metadata decides first, without reading the content: an
// object someone else controls is refused; one whose version is the one
// the operator last wrote or checked (see Versions), with the
// content-hash and labels desired, needs nothing; one absent and never
// written is created straight away. Otherwise (the object changed since,
// or the operator has not checked it since it started, or the cache has
// not caught up with a write) it is read from the API server:
// controllerutil.CreateOrPatch through ownedClient, which writes as
// fieldOwner and patches with an optimistic lock. CreateOrPatch skips the
// patch when the mutation changed nothing; the mutation itself refuses a
// foreign or externally modified object and leaves an object whose data
// and labels are already right as it is.
//
// Every create and patch reserves the desired size in Ledger first (the
// mutation does, once it knows it writes), and settles the reservation
// when the write returned: the object holds the new size, or, when
// nothing was written, the size it held.
func (w Writer) apply(ctx context.Context, kind string, desired, current client.Object, content objectContent) (bool, error) {
	key := client.ObjectKeyFromObject(desired)
	owner := metav1.GetControllerOf(desired)
	writer := WriterKey{Kind: owner.Kind, NamespacedName: types.NamespacedName{Namespace: key.Namespace, Name: owner.Name}}
	written := writtenKey{kind: kind, name: key.Name}
	want := desired.GetAnnotations()[contenthash.Annotation]
	c := ownedClient{Client: client.WithFieldOwner(w.Client, string(FieldOwner)), reader: w.Reader, kind: kind}
	var held *Reservation
	defer func() { held.Cancel() }() // unless settled: nothing was written
	reserve := func() error {
		r, err := w.Ledger.Reserve(writer, StoredKey{Kind: kind, NamespacedName: key}, content.size)
		if err != nil {
			return budgetStall(kind+" "+key.String(), err)
		}
		held = r
		return nil
	}

	recorded := w.Versions.get(writer, written)
	meta := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: kind}}
	err := w.Metadata.Get(ctx, key, meta)
	switch {
	case err == nil && !controlledBy(meta, owner):
		return false, nameConflict(kind, key, owner)
	case err == nil && asLeft(meta, owner.UID, recorded, want) && labelsInclude(meta.GetLabels(), desired.GetLabels()):
		return false, nil // as the operator left it, and as desired
	case apierrors.IsNotFound(err) && recorded == "" && !w.WrittenBefore:
		if err := reserve(); err != nil {
			return false, err
		}
		created, err := w.create(ctx, c, desired)
		if err == nil {
			held.Done(created.GetUID())
			w.Versions.set(writer, written, created.GetResourceVersion())
			return true, nil
		}
		held.Cancel()
		if !apierrors.IsAlreadyExists(err) {
			return false, err
		}
		fallthrough // someone else's, perhaps: read its metadata first
	case apierrors.IsNotFound(err):
		// The watch does not hold it (yet): its metadata, read from the
		// API server, tells first whether it is someone else's, whose
		// content is then never read.
		meta, found, err := related.MetadataFromAPI(ctx, w.Reader, w.Metadata, kind, key)
		if err != nil {
			return false, err
		}
		if found && !controlledBy(meta, owner) {
			return false, nameConflict(kind, key, owner)
		}
	case err != nil:
		return false, fmt.Errorf("reading the metadata of %s %s: %w", kind, key, err)
	}

	result, err := controllerutil.CreateOrPatch(ctx, c, current, func() error {
		if current.GetResourceVersion() == "" { // not found: created as desired
			if err := reserve(); err != nil {
				return err
			}
			content.create()
			return nil
		}
		// The cache may not have held the object, or its controller
		// changed since: the full read decides.
		if !controlledBy(current, owner) {
			return nameConflict(kind, key, owner)
		}
		have := content.hash()
		if have == want && labelsInclude(current.GetLabels(), desired.GetLabels()) {
			return nil // nothing to write: CreateOrPatch sends nothing
		}
		// An object written before the annotation existed, or whose
		// annotation someone removed, is adopted as it is.
		if written, marked := current.GetAnnotations()[contenthash.Annotation]; marked && written != have {
			// The data is neither what the operator wrote last nor what
			// it would write: someone else wrote it.
			return conditions.Stall(backendsv1alpha1.ExternallyModifiedReason,
				"%s %s was changed by another writer since the operator rendered it, so the operator stopped writing it: delete it to have it rendered again, or choose another name", kind, key)
		}
		if err := reserve(); err != nil {
			return err
		}
		content.copyData()
		current.SetLabels(mergeStrings(current.GetLabels(), desired.GetLabels()))
		current.SetAnnotations(mergeStrings(current.GetAnnotations(), desired.GetAnnotations()))
		return nil
	})
	if err != nil {
		w.Versions.set(writer, written, "")
		return false, err // stalls of the mutation, or errors ownedClient wrapped
	}
	// An object adopted without the annotation keeps lacking it: the
	// metadata check never trusts it, and it is read each time.
	w.Versions.set(writer, written, current.GetResourceVersion())
	wrote := result != controllerutil.OperationResultNone
	if wrote {
		held.Done(current.GetUID())
	}
	return wrote, nil
}

// create creates a copy of desired through c and returns it as created.
func (w Writer) create(ctx context.Context, c ownedClient, desired client.Object) (client.Object, error) {
	obj, ok := desired.DeepCopyObject().(client.Object)
	if !ok {
		return nil, fmt.Errorf("cannot copy %T", desired)
	}
	if err := c.Create(ctx, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// ownedClient is the client apply hands to controllerutil.CreateOrPatch.
// It reads the object's content from the API server (reader), never from
// a cache; it patches with an optimistic lock, so that a write by someone
// else between the read and the patch is a conflict (the retry reads
// again and sees it) instead of being overwritten; and it wraps errors as
// apply reports them, a write the API server refuses as invalid or too
// large being a stall (see writeError). The embedded Client writes as
// fieldOwner.
type ownedClient struct {
	client.Client
	reader client.Reader
	kind   string
}

// Get reads obj from the API server. Not found is returned as is, for
// CreateOrPatch to create the object.
func (c ownedClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := c.reader.Get(ctx, key, obj, opts...)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading %s %s: %w", c.kind, key, err)
	}
	return err
}

// Create creates obj.
func (c ownedClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if err := c.Client.Create(ctx, obj, opts...); err != nil {
		return writeError("creating", c.kind, client.ObjectKeyFromObject(obj), err)
	}
	return nil
}

// Patch sends patch with the resourceVersion of obj as read added: see
// lockedPatch.
func (c ownedClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if err := c.Client.Patch(ctx, obj, lockedPatch{patch}, opts...); err != nil {
		return writeError("updating", c.kind, client.ObjectKeyFromObject(obj), err)
	}
	return nil
}

// lockedPatch is a JSON merge patch (CreateOrPatch's client.MergeFrom)
// that also sets metadata.resourceVersion to the object's, as
// client.MergeFromWithOptimisticLock does: the API server applies it only
// to the version that was read, and answers a conflict otherwise. The
// object handed to Patch carries the resourceVersion read, which the
// mutation leaves alone.
type lockedPatch struct{ client.Patch }

// Data returns the merge patch with the resourceVersion set.
func (p lockedPatch) Data(obj client.Object) ([]byte, error) {
	if p.Type() != types.MergePatchType {
		return nil, fmt.Errorf("cannot lock a %s patch: only a JSON merge patch carries a resourceVersion", p.Type())
	}
	version := obj.GetResourceVersion()
	if version == "" {
		return nil, errors.New("cannot lock a patch of an object read without a resourceVersion")
	}
	data, err := p.Patch.Data(obj)
	if err != nil {
		return nil, err
	}
	var patch map[string]json.RawMessage
	if err := json.Unmarshal(data, &patch); err != nil {
		return nil, fmt.Errorf("reading the merge patch: %w", err)
	}
	if patch == nil {
		return nil, errors.New("the merge patch is not a JSON object")
	}
	var meta map[string]json.RawMessage
	if raw, ok := patch["metadata"]; ok {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, fmt.Errorf("reading the merge patch's metadata: %w", err)
		}
	}
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	if meta["resourceVersion"], err = json.Marshal(version); err != nil {
		return nil, err
	}
	if patch["metadata"], err = json.Marshal(meta); err != nil {
		return nil, err
	}
	return json.Marshal(patch)
}

// asLeft reports whether meta shows an object as the operator last wrote
// or checked it: controlled by owner, at version recorded (see
// Versions), with content hash hash.
func asLeft(meta metav1.Object, owner types.UID, recorded, hash string) bool {
	ref := metav1.GetControllerOfNoCopy(meta)
	return ref != nil && ref.UID == owner && recorded != "" && meta.GetResourceVersion() == recorded &&
		meta.GetAnnotations()[contenthash.Annotation] == hash
}

// controlledBy reports whether owner is obj's controller.
func controlledBy(obj metav1.Object, owner *metav1.OwnerReference) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == owner.UID
}

// nameConflict is the stall of an object another owner controls.
func nameConflict(kind string, key client.ObjectKey, owner *metav1.OwnerReference) error {
	return conditions.Stall(backendsv1alpha1.NameConflictReason,
		"%s %s already exists and is not controlled by %s %s: choose another name or delete it", kind, key, owner.Kind, owner.Name)
}

// writeError wraps an error writing an object. A write the API server
// refuses as invalid or too large is a stall with its reason: retrying
// the same write would only be refused again.
func writeError(verb, kind string, key client.ObjectKey, err error) error {
	if apierrors.IsInvalid(err) || apierrors.IsRequestEntityTooLargeError(err) {
		return conditions.Stall(backendsv1alpha1.WriteRejectedReason, "The API server refused %s %s %s: %v", verb, kind, key, APIMessage(err))
	}
	return fmt.Errorf("%s %s %s: %w", verb, kind, key, err)
}

// APIMessage is the message of an API error.
func APIMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		return status.Status().Message
	}
	return err.Error()
}

// setContentHash records hash in obj's contenthash.Annotation.
func setContentHash(obj client.Object, hash string) {
	obj.SetAnnotations(mergeStrings(obj.GetAnnotations(), map[string]string{contenthash.Annotation: hash}))
}

// mergeStrings returns a copy of have with every entry of want set.
func mergeStrings(have, want map[string]string) map[string]string {
	out := maps.Clone(have)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, want)
	return out
}

// labelsInclude reports whether every label of want is set in have.
func labelsInclude(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
