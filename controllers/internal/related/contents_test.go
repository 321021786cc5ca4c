package related

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestContents checks what Contents gives back of an object it kept: its
// namespace, name and version, and its content (a Secret's type and data,
// a ConfigMap's data and binaryData), only at the version it was read at
// and for the kind it is, and never the rest of its metadata.
func TestContents(t *testing.T) {
	meta := metav1.ObjectMeta{
		Namespace: "ns", Name: "pw", ResourceVersion: "7", UID: "u-1",
		Labels:          map[string]string{"team": "a"},
		Annotations:     map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"data":{"password":"x"}}`},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "u-2"}},
		ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		Finalizers:      []string{"f"},
	}
	secretKey := ContentKey{Kind: "Secret", NamespacedName: types.NamespacedName{Namespace: "ns", Name: "pw"}}
	configMapKey := ContentKey{Kind: "ConfigMap", NamespacedName: types.NamespacedName{Namespace: "ns", Name: "pw"}}
	kept := metav1.ObjectMeta{Namespace: "ns", Name: "pw", ResourceVersion: "7"}

	cases := map[string]struct {
		key     ContentKey
		put     client.Object
		version string
		get     client.Object
		want    client.Object // nil: not found
	}{
		"a Secret's type and data": {
			key: secretKey, version: "7", get: &corev1.Secret{},
			put: &corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": []byte("c"), "tls.key": []byte("k")}},
			want: &corev1.Secret{ObjectMeta: kept, Type: corev1.SecretTypeTLS,
				Data: map[string][]byte{"tls.crt": []byte("c"), "tls.key": []byte("k")}},
		},
		"a Secret without data": {
			key: secretKey, version: "7", get: &corev1.Secret{},
			put:  &corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeOpaque},
			want: &corev1.Secret{ObjectMeta: kept, Type: corev1.SecretTypeOpaque},
		},
		"a ConfigMap's data and binaryData": {
			key: configMapKey, version: "7", get: &corev1.ConfigMap{},
			put: &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"ca.crt": "pem", "other": "x"}, BinaryData: map[string][]byte{"bin": {1, 2}}},
			want: &corev1.ConfigMap{ObjectMeta: kept, Data: map[string]string{"ca.crt": "pem", "other": "x"},
				BinaryData: map[string][]byte{"bin": {1, 2}}},
		},
		"another version": {
			key: secretKey, version: "8", get: &corev1.Secret{},
			put: &corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"password": []byte("p")}},
		},
		"a Secret read as a ConfigMap": {
			key: secretKey, version: "7", get: &corev1.ConfigMap{},
			put: &corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"password": []byte("p")}},
		},
		"a ConfigMap read as a Secret": {
			key: configMapKey, version: "7", get: &corev1.Secret{},
			put: &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"ca.crt": "pem"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := NewContents()
			c.Put(tc.key, tc.put)
			found := c.Get(tc.key, tc.version, tc.get)
			if found != (tc.want != nil) {
				t.Fatalf("Get found %v, want %v", found, tc.want != nil)
			}
			if tc.want == nil {
				return
			}
			if diff := cmp.Diff(tc.want, tc.get); diff != "" {
				t.Errorf("Get (-want +got):\n%s", diff)
			}
		})
	}
}

// TestContentsCopies checks that neither the object Put kept nor the one
// Get filled shares its data with the content kept: a caller changing
// either changes nothing of what the next Get gives.
func TestContentsCopies(t *testing.T) {
	key := ContentKey{Kind: "Secret", NamespacedName: types.NamespacedName{Namespace: "ns", Name: "pw"}}
	read := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pw", ResourceVersion: "1"},
		Data: map[string][]byte{"password": []byte("secret")}}
	c := NewContents()
	c.Put(key, read)
	read.Data["password"][0] = 'X'

	first := &corev1.Secret{}
	if !c.Get(key, "1", first) {
		t.Fatal("Get found nothing")
	}
	first.Data["password"][0] = 'Y'
	first.Data["other"] = []byte("added")

	second := &corev1.Secret{}
	if !c.Get(key, "1", second) {
		t.Fatal("Get found nothing")
	}
	if diff := cmp.Diff(map[string][]byte{"password": []byte("secret")}, second.Data); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}

	c.Forget(key)
	if c.Get(key, "1", &corev1.Secret{}) {
		t.Error("Get found a content forgotten")
	}
}
