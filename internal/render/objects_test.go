package render

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

var testOwner = Owner{
	APIVersion: "backends.infrastate.io/v1alpha1",
	Kind:       "HttpBackend",
	Name:       "app",
	Namespace:  "team-a",
	UID:        "6f1c2a9e-0000-4000-8000-000000000001",
}

// wantMeta is the metadata every object rendered for testOwner carries.
func wantMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:      name,
		Namespace: "team-a",
		Labels: map[string]string{
			"app.kubernetes.io/managed-by":   "backend-operator",
			"backends.infrastate.io/backend": "app",
		},
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion:         "backends.infrastate.io/v1alpha1",
			Kind:               "HttpBackend",
			Name:               "app",
			UID:                "6f1c2a9e-0000-4000-8000-000000000001",
			Controller:         new(true),
			BlockOwnerDeletion: new(true),
		}},
	}
}

func TestConfigMap(t *testing.T) {
	files := Files{BackendTF: []byte("a"), BackendTFJSON: []byte("b"), BackendTFBackend: []byte("c")}
	got := ConfigMap(testOwner, "app-backend", files)
	want := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: wantMeta("app-backend"),
		Data:       map[string]string{"backend.tf": "a", "backend.tf.json": "b", "backend.tfbackend": "c"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ConfigMap (-want +got):\n%s", diff)
	}
}

func TestCredentialsSecret(t *testing.T) {
	cases := map[string]struct {
		data map[string][]byte
		want map[string][]byte
	}{
		"nil data":   {},
		"empty data": {data: map[string][]byte{}},
		"password": {
			data: map[string][]byte{"TF_HTTP_PASSWORD": []byte("pw")},
			want: map[string][]byte{"TF_HTTP_PASSWORD": []byte("pw")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := CredentialsSecret(testOwner, "app-backend-credentials", tc.data)
			want := &corev1.Secret{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
				ObjectMeta: wantMeta("app-backend-credentials"),
				Type:       corev1.SecretTypeOpaque,
				Data:       tc.want,
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("CredentialsSecret (-want +got):\n%s", diff)
			}
		})
	}
}

// TestObjectsDoNotAlias checks that the objects share no map or slice with
// the inputs or with each other.
func TestObjectsDoNotAlias(t *testing.T) {
	data := map[string][]byte{"TF_HTTP_PASSWORD": []byte("pw")}
	s := CredentialsSecret(testOwner, "s", data)
	data["TF_HTTP_PASSWORD"][0] = 'X'
	data["OTHER"] = nil
	if diff := cmp.Diff(map[string][]byte{"TF_HTTP_PASSWORD": []byte("pw")}, s.Data); diff != "" {
		t.Errorf("the Secret aliases its data (-want +got):\n%s", diff)
	}
	a := ConfigMap(testOwner, "c", Files{})
	b := ConfigMap(testOwner, "c", Files{})
	a.Labels["x"] = "y"
	*a.OwnerReferences[0].Controller = false
	if diff := cmp.Diff(wantMeta("c"), b.ObjectMeta); diff != "" {
		t.Errorf("two ConfigMaps share metadata (-want +got):\n%s", diff)
	}
}

func TestNames(t *testing.T) {
	if got, want := DefaultConfigMapName("app"), "app-backend"; got != want {
		t.Errorf("DefaultConfigMapName = %q, want %q", got, want)
	}
	if got, want := CredentialsSecretName("app"), "app-backend-credentials"; got != want {
		t.Errorf("CredentialsSecretName = %q, want %q", got, want)
	}
}

func TestBackendLabelValue(t *testing.T) {
	long := strings.Repeat("a", 60) + "." + strings.Repeat("b", 172) // 233 characters, the longest name the API allows
	cases := map[string]struct {
		name string
		want string
	}{
		"short name is kept": {name: "app", want: "app"},
		"63 characters are kept": {
			name: strings.Repeat("x", 63),
			want: strings.Repeat("x", 63),
		},
		"longer names are shortened": {
			name: long,
			want: strings.Repeat("a", 52) + "-c93093e27c", // sha256 of the name, computed with python3 hashlib
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := BackendLabelValue(tc.name)
			if errs := validation.IsValidLabelValue(got); len(errs) > 0 {
				t.Errorf("BackendLabelValue(%q) = %q is not a label value: %v", tc.name, got, errs)
			}
			if got != tc.want {
				t.Errorf("BackendLabelValue = %q, want %q", got, tc.want)
			}
		})
	}
	if BackendLabelValue(long) == BackendLabelValue(long+"c") {
		t.Error("two long names share a label value")
	}
}
