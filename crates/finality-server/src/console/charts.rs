//! Small horizontal bar charts as inline SVG, drawn on the server: no
//! script, no chart library, readable with JavaScript off. A charting crate
//! would bring fonts and raster back ends for what is a few rectangles.

/// One bar: a label, its value, and the text shown beside it.
#[derive(Debug, Clone)]
pub struct Bar {
    pub label: String,
    pub value: f64,
    pub text: String,
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// An SVG of `bars`, scaled to the largest; `title` is its accessible name.
pub fn bars(title: &str, bars: &[Bar]) -> String {
    const W: f64 = 360.0;
    const LABEL: f64 = 110.0;
    const ROW: f64 = 22.0;
    let max = bars.iter().map(|b| b.value).fold(0.0_f64, f64::max);
    let h = ROW * bars.len().max(1) as f64 + 4.0;
    let mut out = format!(
        "<svg class=\"chart\" role=\"img\" aria-label=\"{t}\" viewBox=\"0 0 {W} {h}\" \
         width=\"{W}\" height=\"{h}\" xmlns=\"http://www.w3.org/2000/svg\"><title>{t}</title>",
        t = escape(title)
    );
    if bars.is_empty() {
        out.push_str("<text x=\"0\" y=\"16\" class=\"none\">no data in this window</text>");
    }
    for (i, b) in bars.iter().enumerate() {
        let y = i as f64 * ROW + 2.0;
        let span = W - LABEL - 70.0;
        let w = if max > 0.0 {
            (b.value / max * span).max(if b.value > 0.0 { 1.0 } else { 0.0 })
        } else {
            0.0
        };
        out.push_str(&format!(
            "<text x=\"{lx}\" y=\"{ty}\" text-anchor=\"end\">{label}</text>\
             <rect x=\"{LABEL}\" y=\"{y}\" width=\"{w:.1}\" height=\"{bh}\" rx=\"2\"/>\
             <text x=\"{vx:.1}\" y=\"{ty}\" class=\"value\">{text}</text>",
            lx = LABEL - 6.0,
            ty = y + 14.0,
            label = escape(&b.label),
            bh = ROW - 6.0,
            vx = LABEL + w + 6.0,
            text = escape(&b.text),
        ));
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_scale_to_the_largest_and_escape_labels() {
        let svg = bars(
            "final by <source>",
            &[
                Bar {
                    label: "webhook".into(),
                    value: 90.0,
                    text: "90%".into(),
                },
                Bar {
                    label: "poll & co".into(),
                    value: 45.0,
                    text: "45%".into(),
                },
            ],
        );
        assert!(svg.contains("width=\"180.0\""), "{svg}");
        assert!(svg.contains("width=\"90.0\""), "{svg}");
        assert!(svg.contains("poll &amp; co") && svg.contains("final by &lt;source&gt;"));
        assert!(bars("empty", &[]).contains("no data"));
    }
}
