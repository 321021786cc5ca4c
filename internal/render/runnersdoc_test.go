package render

import (
	"os"
	"strings"
	"testing"
)

// runnerTableDoc is the page that shows the runner table to users.
const runnerTableDoc = "../../docs/runners.md"

// runnerTableMarkdown returns the runner table as the Markdown rows of
// docs/runners.md: feature, what sets it, the Terraform and the OpenTofu
// versions that read it.
func runnerTableMarkdown() string {
	var b strings.Builder
	b.WriteString("| feature | set by | terraform | opentofu |\n|---|---|---|---|\n")
	for _, f := range Features {
		b.WriteString("| `" + string(f.ID) + "` | " + strings.ReplaceAll(f.Setting, "|", "\\|") + " |")
		for _, flavor := range flavors {
			if r, ok := f.Support[flavor]; ok {
				b.WriteString(" " + r.String() + " |")
			} else {
				b.WriteString(" no release |")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestRunnerTableDoc checks that docs/runners.md shows the runner table as
// the code has it, between its markers.
func TestRunnerTableDoc(t *testing.T) {
	doc, err := os.ReadFile(runnerTableDoc)
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- runner table: begin -->\n", "<!-- runner table: end -->"
	text := string(doc)
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the runner table markers", runnerTableDoc)
	}
	if got, want := text[i+len(begin):j], runnerTableMarkdown(); got != want {
		t.Errorf("the runner table in %s differs from render.Features; replace it with:\n%s", runnerTableDoc, want)
	}
	for flavor, v := range Oldest {
		if want := string(flavor) + " " + v.String(); !strings.Contains(text, want) {
			t.Errorf("%s does not give the oldest known release %q", runnerTableDoc, want)
		}
	}
}
