package qrcode

import (
	"image"
	"io"

	"github.com/yeqown/go-qrcode/writer/standard"
	"golang.org/x/image/draw"
)

// PNG writes the QR code of content as a Size×Size PNG. logo, when not nil,
// is drawn centred over the code, scaled to fit LogoSize×LogoSize; the
// default error correction level is then Q. Errors: *OptionError for bad
// options, ErrContent, ErrTooSmall (wrapped), or the writer's error.
func PNG(w io.Writer, content string, o Options, logo image.Image) error {
	p, err := prepare(content, o, logo != nil || o.Logo != "")
	if err != nil {
		return err
	}
	o = p.o

	modules := p.code.Dimension() + 2*QuietZone
	block := o.Size / modules // >= 1: prepare checked modules <= Size
	if block > 255 {          // the writer's limit; unreachable with MaxSize 2048
		block = 255
	}
	// The quiet zone takes the pixels left over by whole-pixel modules, so
	// the image is exactly Size wide; an odd leftover goes right and bottom.
	extra := o.Size - modules*block
	lead := QuietZone*block + extra/2
	trail := QuietZone*block + extra - extra/2

	opts := []standard.ImageOption{
		standard.WithQRWidth(uint8(block)),
		standard.WithBorderWidth(lead, trail, trail, lead), // top, right, bottom, left
		standard.WithFgColor(p.fg),
		standard.WithBgColor(p.bg),
		standard.WithBuiltinImageEncoder(standard.PNG_FORMAT),
	}
	if logo != nil && o.LogoSize > 0 {
		if scaled := scaleToFit(logo, o.LogoSize); scaled != nil {
			// The writer centres the logo and refuses (with a log line) one
			// wider than 1/multiplier of the image; Validate keeps LogoSize
			// within Size/MaxLogoDivisor, so it always fits.
			opts = append(opts,
				standard.WithLogoImage(scaled),
				standard.WithLogoSizeMultiplier(MaxLogoDivisor))
		}
	}
	return p.code.Save(standard.NewWithWriter(nopCloser{w}, opts...))
}

// scaleToFit scales img to fit a box×box square, keeping its aspect ratio.
// It returns nil for an empty image.
func scaleToFit(img image.Image, box int) image.Image {
	b := img.Bounds()
	if b.Dx() <= 0 || b.Dy() <= 0 {
		return nil
	}
	w, h := box, box
	if b.Dx() > b.Dy() {
		h = max(1, box*b.Dy()/b.Dx())
	} else if b.Dy() > b.Dx() {
		w = max(1, box*b.Dx()/b.Dy())
	}
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.CatmullRom.Scale(dst, dst.Bounds(), img, b, draw.Src, nil)
	return dst
}

// nopCloser keeps the writer from closing the caller's io.Writer.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
