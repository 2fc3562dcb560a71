package qrcode

import (
	"bufio"
	"encoding/xml"
	"io"
	"math"
	"strconv"
)

// SVG writes the QR code of content as an SVG document Size×Size pixels
// wide. Coordinates are in modules: viewBox "0 0 D D" where D is the code's
// modules plus the quiet zone on both sides. logoHref, when not empty, is
// referenced by an <image> element (href and xlink:href, XML-escaped) of
// LogoSize×LogoSize pixels, centred; the default error correction level is
// then Q. Errors: *OptionError for bad options, ErrContent, ErrTooSmall
// (wrapped), or the writer's error.
func SVG(w io.Writer, content string, o Options, logoHref string) error {
	p, err := prepare(content, o, logoHref != "" || o.Logo != "")
	if err != nil {
		return err
	}
	o = p.o
	bits, err := p.bitmap()
	if err != nil {
		return err
	}
	n := len(bits)
	d := n + 2*QuietZone

	bw := bufio.NewWriterSize(w, 8192)
	var num [20]byte
	itoa := func(i int) { bw.Write(strconv.AppendInt(num[:0], int64(i), 10)) }
	ftoa := func(f float64) { bw.Write(strconv.AppendFloat(num[:0], math.Round(f*1e4)/1e4, 'f', -1, 64)) }

	bw.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	bw.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" version="1.1" width="`)
	itoa(o.Size)
	bw.WriteString(`" height="`)
	itoa(o.Size)
	bw.WriteString(`" viewBox="0 0 `)
	itoa(d)
	bw.WriteByte(' ')
	itoa(d)
	bw.WriteString(`" shape-rendering="crispEdges">` + "\n")

	// Colours were validated as #RGB or #RRGGBB: nothing to escape.
	bw.WriteString(`<rect width="`)
	itoa(d)
	bw.WriteString(`" height="`)
	itoa(d)
	bw.WriteString(`" fill="`)
	bw.WriteString(o.BackgroundColor)
	bw.WriteString(`"/>` + "\n")

	// One path: each horizontal run of dark modules is one rectangle,
	// "M x y h len v 1 h -len z", offset by the quiet zone.
	bw.WriteString(`<path fill="`)
	bw.WriteString(o.Color)
	bw.WriteString(`" d="`)
	for y, row := range bits {
		for x := 0; x < len(row); {
			if !row[x] {
				x++
				continue
			}
			start := x
			for x < len(row) && row[x] {
				x++
			}
			bw.WriteByte('M')
			itoa(start + QuietZone)
			bw.WriteByte(' ')
			itoa(y + QuietZone)
			bw.WriteByte('h')
			itoa(x - start)
			bw.WriteString("v1h-")
			itoa(x - start)
			bw.WriteByte('z')
		}
	}
	bw.WriteString(`"/>` + "\n")

	if logoHref != "" && o.LogoSize > 0 {
		// Logo box in modules: LogoSize pixels of Size span D modules.
		side := float64(o.LogoSize) * float64(d) / float64(o.Size)
		pos := (float64(d) - side) / 2
		bw.WriteString(`<image x="`)
		ftoa(pos)
		bw.WriteString(`" y="`)
		ftoa(pos)
		bw.WriteString(`" width="`)
		ftoa(side)
		bw.WriteString(`" height="`)
		ftoa(side)
		bw.WriteString(`" preserveAspectRatio="xMidYMid meet" href="`)
		// xml.EscapeText escapes < > & ' " and the whitespace characters
		// that attribute normalisation would change; invalid XML characters
		// become U+FFFD.
		xml.EscapeText(bw, []byte(logoHref))
		bw.WriteString(`" xlink:href="`)
		xml.EscapeText(bw, []byte(logoHref))
		bw.WriteString(`"/>` + "\n")
	}
	bw.WriteString("</svg>\n")
	return bw.Flush()
}
