package printer

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apiserver/pkg/registry/rest"
	kjson "sigs.k8s.io/json"

	"github.com/kwrec/kwrec/internal/table"
)

// Custom prints custom resources of one version of a
// CustomResourceDefinition with the server's own table convertor
// (k8s.io/apiextensions-apiserver's tableconvertor) over the version's
// additionalPrinterColumns: Name, then each column, its cell what the
// column's JSONPath finds, converted to the column's type.
type Custom struct {
	conv    rest.TableConvertor
	columns []byte
	// asText prints the same columns with each date column's type
	// string: the timestamp a date column ages, which the server's
	// convertor reads on the wall clock (time.Since) where a replay
	// reads its own.
	asText rest.TableConvertor
	dates  []int // the cells of date columns
}

var _ table.Printer = (*Custom)(nil)

// NewCustom returns the printer of version of crd, a
// CustomResourceDefinition's JSON, as the server builds it when it serves
// that version: a version without printer columns prints Name and Age
// (the server's serveDefaultColumnsIfEmpty). A column whose JSONPath the
// server cannot parse makes it print Name alone, as the server does.
func NewCustom(crd []byte, version string) (*Custom, error) {
	var def apiextensionsv1.CustomResourceDefinition
	if err := json.Unmarshal(crd, &def); err != nil {
		return nil, fmt.Errorf("reading the CustomResourceDefinition: %w", err)
	}
	var cols []apiextensionsv1.CustomResourceColumnDefinition
	found := false
	for _, v := range def.Spec.Versions {
		if v.Name == version {
			cols, found = v.AdditionalPrinterColumns, true
		}
	}
	if !found {
		return nil, fmt.Errorf("%s has no version %s", def.Name, version)
	}
	if len(cols) == 0 {
		// k8s.io/apiextensions-apiserver/pkg/apiserver/helpers.go,
		// serveDefaultColumnsIfEmpty.
		cols = []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Age", Type: "date",
			Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"], JSONPath: ".metadata.creationTimestamp"}}
	}
	c := &Custom{}
	c.conv, _ = tableconvertor.New(cols) // on error, the convertor of Name alone, as the server keeps it
	text := make([]apiextensionsv1.CustomResourceColumnDefinition, len(cols))
	for i, col := range cols {
		text[i] = col
		if col.Type == "date" {
			text[i].Type = "string"
			c.dates = append(c.dates, i+1)
		}
	}
	c.asText, _ = tableconvertor.New(text)
	t, err := c.conv.ConvertToTable(context.Background(), &unstructured.Unstructured{Object: map[string]any{}}, nil)
	if err != nil {
		return nil, err
	}
	if c.columns, err = json.Marshal(t.ColumnDefinitions); err != nil {
		return nil, err
	}
	if len(t.ColumnDefinitions) == 1 {
		c.dates = nil // the columns did not parse: Name alone
	}
	return c, nil
}

// Columns returns the column definitions the server sends.
func (c *Custom) Columns() []byte { return c.columns }

// Cells returns the cells of obj's row, with its date columns aged as of
// now.
func (c *Custom) Cells(obj []byte, now time.Time) ([]byte, error) {
	m := map[string]any{}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(obj, &m); err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	t, err := c.conv.ConvertToTable(context.Background(), u, nil)
	if err != nil {
		return nil, err
	}
	if len(t.Rows) != 1 {
		return nil, fmt.Errorf("the table convertor made %d rows of one object", len(t.Rows))
	}
	cells := t.Rows[0].Cells
	if len(c.dates) > 0 {
		text, err := c.asText.ConvertToTable(context.Background(), u, nil)
		if err != nil {
			return nil, err
		}
		for _, i := range c.dates {
			cells[i] = age(cells[i], text.Rows[0].Cells[i], now)
		}
	}
	return json.Marshal(cells)
}

// age is a date column's cell as of now: nil where the server's cell is
// (no value, or not a string), else the timestamp text aged as
// cellForJSONValue and metatable.ConvertToHumanReadableDateType do it
// ("<invalid>" for a text that is not RFC 3339, as for a time to come).
func age(cell, text any, now time.Time) any {
	s, ok := text.(string)
	if cell == nil || !ok {
		return cell
	}
	var ts metav1.Time
	if ts.UnmarshalQueryParameter(s) != nil {
		return "<invalid>"
	}
	if ts.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(ts.Time))
}
