package related

import (
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/contenthash"
	"github.com/infrastate/backend-operator/internal/render"
)

// heldObject is what relatedObjects keeps of a Secret or ConfigMap, its
// name and namespace being the key it is held under: what trimMetadata
// keeps, in fewer and smaller allocations. The content hash and the stored
// size are fields rather than an annotation map, the labels a slice
// rather than a map (a map of the two labels of a rendered object weighs
// five times their strings), the controller reference alone, the UIDs and
// the content hash packed in bytes rather than text (see packedUID,
// packedHash), and the label keys and values, API versions and kinds the
// operator writes are its own constants rather than copies decoded for
// each object (see knownString): the manager holds three of these for
// each backend.
type heldObject struct {
	uid             packedUID
	resourceVersion string
	// labels are the object's labels as key, value pairs sorted by key.
	labels      []string
	controller  *heldController
	contentHash packedHash
	storedBytes string
	hashed      bool
	sized       bool
}

// heldController is the controller reference of a held object.
type heldController struct {
	apiVersion, kind, name string
	uid                    packedUID
	// blockOwnerDeletion is the reference's: unset, true or false.
	blockOwnerDeletion optionalBool
}

// optionalBool is a *bool kept without its allocation.
type optionalBool uint8

const (
	boolUnset optionalBool = iota
	boolFalse
	boolTrue
)

func optionalBoolOf(b *bool) optionalBool {
	switch {
	case b == nil:
		return boolUnset
	case *b:
		return boolTrue
	}
	return boolFalse
}

// pointer is a new *bool of o, nil when unset.
func (o optionalBool) pointer() *bool {
	if o == boolUnset {
		return nil
	}
	b := o == boolTrue
	return &b
}

// holdObject is what relatedObjects keeps of obj.
func holdObject(obj metav1.Object) *heldObject {
	h := &heldObject{uid: packUID(obj.GetUID()), resourceVersion: obj.GetResourceVersion(), labels: labelPairs(obj.GetLabels())}
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		h.controller = &heldController{
			apiVersion: knownString(ref.APIVersion), kind: knownString(ref.Kind), name: ref.Name, uid: packUID(ref.UID),
			blockOwnerDeletion: optionalBoolOf(ref.BlockOwnerDeletion),
		}
	}
	hash, hashed := obj.GetAnnotations()[contenthash.Annotation]
	h.contentHash, h.hashed = packHash(hash), hashed
	h.storedBytes, h.sized = obj.GetAnnotations()[contenthash.StoredBytesAnnotation]
	return h
}

// metadata is the object's metadata as trimMetadata leaves it, but for
// owners other than the controller.
func (h *heldObject) metadata(kind string, key types.NamespacedName) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: kind},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: key.Namespace, Name: key.Name, UID: h.uid.unpack(), ResourceVersion: h.resourceVersion,
			Labels: labelMap(h.labels),
		},
	}
	if c := h.controller; c != nil {
		m.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: c.apiVersion, Kind: c.kind, Name: c.name, UID: c.uid.unpack(),
			Controller: new(true), BlockOwnerDeletion: c.blockOwnerDeletion.pointer(),
		}}
	}
	if h.hashed || h.sized {
		m.Annotations = make(map[string]string, 2)
	}
	if h.hashed {
		m.Annotations[contenthash.Annotation] = h.contentHash.unpack()
	}
	if h.sized {
		m.Annotations[contenthash.StoredBytesAnnotation] = h.storedBytes
	}
	return m
}

// labelPairs are labels as key, value pairs sorted by key, the keys and
// values the operator writes as its own constants; nil for none.
func labelPairs(labels map[string]string) []string {
	if len(labels) == 0 {
		return nil
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, strings.Compare)
	pairs := make([]string, 0, 2*len(labels))
	for _, k := range keys {
		pairs = append(pairs, knownString(k), knownString(labels[k]))
	}
	return pairs
}

// labelMap is pairs as a map, nil for none: the caller may change it.
func labelMap(pairs []string) map[string]string {
	if len(pairs) == 0 {
		return nil
	}
	m := make(map[string]string, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		m[pairs[i]] = pairs[i+1]
	}
	return m
}

// knownStrings are the label keys and values, API versions and kinds the
// operator writes on the objects it renders and reads on those it
// references, by value: knownString gives these copies instead of those
// decoded for each object.
var knownStrings = func() map[string]string {
	m := map[string]string{}
	for _, s := range []string{
		render.ManagedByLabel, render.ManagedByValue, render.BackendLabel,
		backendsv1alpha1.AllowReferenceLabel, "true",
		backendsv1alpha1.GroupVersion.String(),
		backendsv1alpha1.HttpBackendKind, backendsv1alpha1.CosBackendKind, backendsv1alpha1.RemoteStateKind,
		backendsv1alpha1.OutputGrantKind, backendsv1alpha1.StateHistoryKind, backendsv1alpha1.StateLockKind,
		backendsv1alpha1.StateRestoreKind,
	} {
		m[s] = s
	}
	return m
}()

// knownString is the operator's own copy of s when s is one of
// knownStrings, s otherwise.
func knownString(s string) string {
	if v, ok := knownStrings[s]; ok {
		return v
	}
	return s
}
