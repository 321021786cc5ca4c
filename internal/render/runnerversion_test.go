package render

import "testing"

func TestParseVersion(t *testing.T) {
	cases := map[string]struct {
		want    Version
		wantErr bool
	}{
		"1.5":       {want: Version{1, 5, 0}},
		"1.12.6":    {want: Version{1, 12, 6}},
		"0.15.5":    {want: Version{0, 15, 5}},
		"1":         {wantErr: true},
		"1.2.3.4":   {wantErr: true},
		"1.x":       {wantErr: true},
		"01.2":      {wantErr: true},
		"1.6.0-rc1": {wantErr: true},
		"-1.2":      {wantErr: true},
		"":          {wantErr: true},
	}
	for in, tc := range cases {
		t.Run(in, func(t *testing.T) {
			got, err := ParseVersion(in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("ParseVersion(%q) = %v, %v; want %v, error %t", in, got, err, tc.want, tc.wantErr)
			}
		})
	}
}
