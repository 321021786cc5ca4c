package owned

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/budget"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/internal/contenthash"
)

// ConfigMapBytes is the size of a ConfigMap's data as the API server
// counts it against its limit: the keys and values of data and
// binaryData.
func ConfigMapBytes(cm *corev1.ConfigMap) int64 {
	return dataBytes(cm.Data) + dataBytes(cm.BinaryData)
}

// SecretBytes is the size of a Secret's data as the API server counts it:
// the keys and values of data and stringData.
func SecretBytes(s *corev1.Secret) int64 {
	return dataBytes(s.Data) + dataBytes(s.StringData)
}

// dataBytes is the size of the keys and values of data.
func dataBytes[V string | []byte](data map[string]V) int64 {
	var n int64
	for k, v := range data {
		n += int64(len(k) + len(v))
	}
	return n
}

// setStoredBytes records size in obj's contenthash.StoredBytesAnnotation.
func setStoredBytes(obj client.Object, size int64) {
	obj.SetAnnotations(mergeStrings(obj.GetAnnotations(), map[string]string{contenthash.StoredBytesAnnotation: strconv.FormatInt(size, 10)}))
}

// Fit checks that the objects desired, ConfigMaps and Secrets of one owner
// about to be applied in this order, fit its namespace's API storage
// together (see Ledger.Fit): a refusal, a BudgetExceeded stall, leaves
// every one of them as it was rather than some written and some not. Each
// apply still reserves its own bytes.
//
// An object the watched metadata shows with the desired content hash,
// which apply will not write again, is left out: one written before the
// stored size annotation existed counts from its next write, not from a
// check that writes nothing.
func (w Writer) Fit(ctx context.Context, desired ...client.Object) error {
	if w.Ledger == nil || len(desired) == 0 {
		return nil
	}
	owner := metav1.GetControllerOf(desired[0])
	if owner == nil {
		return errors.New("the objects to write have no controller")
	}
	writer := WriterKey{Kind: owner.Kind, NamespacedName: types.NamespacedName{Namespace: desired[0].GetNamespace(), Name: owner.Name}}
	items := make([]Item, 0, len(desired))
	names := make([]string, 0, len(desired))
	for _, obj := range desired {
		var (
			it   Item
			hash string
		)
		switch o := obj.(type) {
		case *corev1.ConfigMap:
			it, hash = Item{Key: StoredKey{Kind: "ConfigMap"}, Size: ConfigMapBytes(o)}, contenthash.ConfigMap(o.Data, nil)
		case *corev1.Secret:
			it, hash = Item{Key: StoredKey{Kind: "Secret"}, Size: SecretBytes(o)}, contenthash.Secret(o.Data)
		default:
			return fmt.Errorf("cannot count the bytes of a %T", obj)
		}
		it.Key.NamespacedName = client.ObjectKeyFromObject(obj)
		if w.unchanged(ctx, it.Key, owner, hash) {
			continue
		}
		items = append(items, it)
		names = append(names, it.Key.Kind+" "+it.Key.String())
	}
	return budgetStall(strings.Join(names, " and "), w.Ledger.Fit(writer, items...))
}

// unchanged reports whether the watched metadata shows key controlled by
// owner with content hash hash: what apply would write is there already.
func (w Writer) unchanged(ctx context.Context, key StoredKey, owner *metav1.OwnerReference, hash string) bool {
	meta := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: key.Kind}}
	if err := w.Metadata.Get(ctx, key.NamespacedName, meta); err != nil {
		return false
	}
	return controlledBy(meta, owner) && meta.GetAnnotations()[contenthash.Annotation] == hash
}

// budgetStall is the BudgetExceeded stall of the writes of objects (their
// kinds and names) that the API storage budget refused with err; other
// errors, and nil, are returned as they are.
func budgetStall(objects string, err error) error {
	var exceeded *budget.ExceededError
	if !errors.As(err, &exceeded) {
		return err
	}
	verb := "was"
	if strings.Contains(objects, " and ") {
		verb = "were"
	}
	return conditions.Stall(backendsv1alpha1.BudgetExceededReason,
		"%s %s not written: %s. What the operator wrote before stays as it is: publish fewer or smaller outputs with spec.outputs, "+
			"delete the backends or RemoteStates this namespace no longer needs, or ask the operator's admin to raise --%s",
		objects, verb, exceeded.Error(), exceeded.Flag)
}
