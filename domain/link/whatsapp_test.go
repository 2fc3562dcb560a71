package link_test

import (
	"testing"

	"github.com/linkd/linkd/domain/link"
)

func TestWithWhatsAppText(t *testing.T) {
	t.Parallel()
	const msg = "Hi & welcome, 100% <sure>?"
	const enc = "Hi%20%26%20welcome%2C%20100%25%20%3Csure%3E%3F"
	cases := []struct {
		name, target, message, want string
	}{
		{"wa.me number", "https://wa.me/15551234567", msg, "https://wa.me/15551234567?text=" + enc},
		{"wa.me keeps other params", "https://wa.me/15551234567?lang=en#x", msg, "https://wa.me/15551234567?lang=en&text=" + enc + "#x"},
		{"api send", "https://api.whatsapp.com/send?phone=15551234567", "hello", "https://api.whatsapp.com/send?phone=15551234567&text=hello"},
		{"web send", "https://web.whatsapp.com/send/?phone=1", "hello", "https://web.whatsapp.com/send/?phone=1&text=hello"},
		{"app scheme", "whatsapp://send?phone=15551234567", "a b", "whatsapp://send?phone=15551234567&text=a%20b"},
		{"app scheme upper case", "WhatsApp://send", "x", "WhatsApp://send?text=x"},
		{"empty text is none", "https://wa.me/1?text=", "x", "https://wa.me/1?text=x"},
		{"own text wins", "https://wa.me/1?text=mine", "x", "https://wa.me/1?text=mine"},
		{"own encoded text wins", "whatsapp://send?%74ext=mine", "x", "whatsapp://send?%74ext=mine"},
		{"no message", "https://wa.me/1", "", "https://wa.me/1"},
		{"not whatsapp", "https://example.com/send?phone=1", "x", "https://example.com/send?phone=1"},
		{"whatsapp.com other path", "https://www.whatsapp.com/download", "x", "https://www.whatsapp.com/download"},
		{"look-alike host", "https://wa.me.example.com/1", "x", "https://wa.me.example.com/1"},
		{"mailto", "mailto:a@example.com", "x", "mailto:a@example.com"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := link.WithWhatsAppText(c.target, c.message); got != c.want {
				t.Errorf("WithWhatsAppText(%q, %q) = %q, want %q", c.target, c.message, got, c.want)
			}
		})
	}
}
