package controllers

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/intern"
	"github.com/infrastate/backend-operator/controllers/internal/related"
)

// CacheOptions are the manager's cache settings: the namespaces to watch
// (all when empty), the objects of this API group of the manager's shard
// (all when shard is nil or empty; see WithShard) and trimmed objects.
func CacheOptions(namespaces []string, shard labels.Selector) cache.Options {
	var defaultNamespaces map[string]cache.Config
	if len(namespaces) > 0 {
		defaultNamespaces = make(map[string]cache.Config, len(namespaces))
		for _, ns := range namespaces {
			defaultNamespaces[ns] = cache.Config{}
		}
	}
	return cache.Options{DefaultNamespaces: defaultNamespaces, ByObject: shardObjects(shard), DefaultTransform: cacheTransform()}
}

// ClientOptions are the manager's client settings: Secrets and ConfigMaps
// are never cached, so that the operator does not hold every Secret of the
// cluster in memory. The reconcilers read the few they need directly, and
// the related watches (see relatedObjects) see the rest for metadata and
// keep only what the operator's objects name or write.
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{
		DisableFor: []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}},
	}}
}

// lastAppliedAnnotation is where kubectl apply keeps the object it applied.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// Bounds of the strings the cached objects share (see cachedStrings): two
// generations of 1024 strings of at most 1 KiB, at most 2 MiB, and in
// practice the few dozen condition types, reasons and messages, methods
// and namespaces that thousands of backends repeat, and the last
// thousand strings that only one object holds.
const (
	cachedStringsLimit  = 1024
	cachedStringsMaxLen = 1024
)

// cacheTransform trims what the manager's informers keep: managed fields and
// kubectl's last-applied-configuration of every object (the reconcilers
// read neither), and the annotations but the operator's content hash and
// stored size of any object an informer would watch for metadata only. The manager's own
// informers watch none (the related watches trim Secrets and ConfigMaps
// themselves), but a Secret created with `kubectl apply` carries its data
// in the last-applied-configuration annotation, which must not end up in
// the operator's memory through one added later.
//
// The backends, which a manager holds by the thousand, are trimmed further
// (see trimBackend), and the strings every object of this API repeats are
// kept once (see cachedStrings).
func cacheTransform() toolscache.TransformFunc {
	strip := cache.TransformStripManagedFields()
	strs := intern.New(cachedStringsLimit, cachedStringsMaxLen)
	return func(in any) (any, error) {
		out, err := strip(in)
		if err != nil {
			return nil, fmt.Errorf("stripping managed fields: %w", err)
		}
		switch obj := out.(type) {
		case *metav1.PartialObjectMetadata:
			obj.Annotations = related.KeptAnnotations(obj.Annotations)
		case backendObject:
			trimBackend(obj)
			cachedStrings(strs, obj)
		case metav1.Object:
			// kubectl apply keeps a copy of the whole object in it: a
			// cached backend would weigh twice what it does.
			if _, ok := obj.GetAnnotations()[lastAppliedAnnotation]; ok {
				annotations := maps.Clone(obj.GetAnnotations())
				delete(annotations, lastAppliedAnnotation)
				obj.SetAnnotations(annotations)
			}
			if s, ok := obj.(statusObject); ok {
				cachedStrings(strs, s)
			}
		}
		return out, nil
	}
}

// trimBackend drops from a cached backend its labels and annotations: no
// reconciler, predicate or map function reads a backend's (the shard's
// label selector is the API server's, and a reference to a backend on
// another shard reads its labels from the API server), and the status
// patch, a merge patch between two copies of the cached object, never
// sends metadata. kubectl, Helm, Argo CD and Flux annotate and label the
// objects they apply, a few hundred bytes to kilobytes per backend.
func trimBackend(obj backendObject) {
	obj.SetLabels(nil)
	obj.SetAnnotations(nil)
}

// cachedStrings has obj, a cached object of this API, hold the copies
// strs holds of the strings thousands of objects repeat, rather than the
// copies decoded for each: its API version and kind, namespace and
// finalizers, its conditions' types, statuses, reasons and messages, and
// a backend's lock status, compatible runners and methods. The strings
// are the same, only their memory is shared: a string cannot change, so
// that no object can change another's. The slices of conditions and
// runners lose the room decoding left at their ends.
func cachedStrings(strs *intern.Table, obj statusObject) {
	if tm, ok := obj.GetObjectKind().(*metav1.TypeMeta); ok {
		strs.Set(&tm.APIVersion)
		strs.Set(&tm.Kind)
	}
	obj.SetNamespace(strs.String(obj.GetNamespace()))
	finalizers := obj.GetFinalizers()
	for i := range finalizers {
		strs.Set(&finalizers[i])
	}
	conds := obj.StatusConditions()
	*conds = exact(*conds)
	for i := range *conds {
		c := &(*conds)[i]
		strs.Set(&c.Type)
		c.Status = metav1.ConditionStatus(strs.String(string(c.Status)))
		strs.Set(&c.Reason)
		strs.Set(&c.Message)
	}
	switch b := obj.(type) {
	case *backendsv1alpha1.HttpBackend:
		backendStatusStrings(strs, &b.Status.BackendStatus)
		for _, s := range []*string{&b.Spec.UpdateMethod, &b.Spec.LockMethod, &b.Spec.UnlockMethod, &b.Spec.Username} {
			strs.Set(s)
		}
		if ref := b.Spec.PasswordSecretRef; ref != nil {
			strs.Set(&ref.Key)
		}
	case *backendsv1alpha1.CosBackend:
		backendStatusStrings(strs, &b.Status.BackendStatus)
		strs.Set(&b.Spec.Region)
		strs.Set(&b.Status.Region)
	}
}

// exact is s in an array of its length: decoding grows a slice by
// doubling, and a cached object would keep the room left at its end.
func exact[T any](s []T) []T {
	if len(s) == 0 || cap(s) == len(s) {
		return s
	}
	return slices.Clone(s)
}

// backendStatusStrings has a backend's status hold strs' copies of its
// lock status and compatible runners (see cachedStrings).
func backendStatusStrings(strs *intern.Table, status *backendsv1alpha1.BackendStatus) {
	strs.Set(&status.Locked)
	if r := status.Rendered; r != nil {
		r.CompatibleRunners = exact(r.CompatibleRunners)
		for i := range r.CompatibleRunners {
			runner := &r.CompatibleRunners[i]
			runner.Flavor = backendsv1alpha1.RunnerFlavor(strs.String(string(runner.Flavor)))
			strs.Set(&runner.Versions)
		}
	}
}
