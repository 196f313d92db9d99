//! The page around the sections: the document head with its inline style
//! sheet (no script, nothing fetched) and the footer naming the trace.

use std::fmt::Write;

use crate::report::html::escape;
use goodput_core::receipt::Receipt;

const STYLE: &str = "\
:root{color-scheme:light}
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;color:#1a1a1a;background:#fff;margin:24px auto;max-width:1340px;padding:0 16px}
h1{font-size:22px;margin:0 0 8px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}h3{font-size:15px;margin:16px 0 6px}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
p.closed-loop{border-left:4px solid #b00;padding:4px 10px;background:#fdecea}dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:0}dl.meta dt{color:#555}dl.meta dd{margin:0}
table{border-collapse:collapse;font-size:13px;font-variant-numeric:tabular-nums}
th,td{padding:3px 6px;border-bottom:1px solid #e4e4e4;text-align:right;white-space:nowrap}
th{background:#f4f4f4;font-weight:600;white-space:normal;vertical-align:bottom}th.group{text-align:center;border-left:1px solid #ccc}
td.name,th.name{text-align:left}td.first,th.first{border-left:1px solid #ccc}
tr.all td{font-weight:600}
tr.declared td{background:#fff3c4;font-weight:600}
.scroll{overflow-x:auto;max-width:100%}
p.note{overflow-wrap:anywhere}.nw{white-space:nowrap}pre{white-space:pre-wrap;overflow-wrap:anywhere}
p.note,ul.notes{color:#444;font-size:13px;margin:6px 0}
.legend{display:flex;flex-wrap:wrap;gap:6px 18px;margin:6px 0 10px;font-size:13px}
.legend span.sw{display:inline-block;width:12px;height:12px;border-radius:2px;vertical-align:-1px;margin-right:5px}
svg{max-width:100%;height:auto;font-family:inherit}
svg text{font-size:11px;fill:#333}
svg .lane-label{font-size:12px;font-weight:600}
svg .band-label{font-size:11px;fill:#555}
svg .axis{stroke:#888;stroke-width:1}
svg .grid{stroke:#eee;stroke-width:1}
svg .boundary{stroke:#444;stroke-width:1;stroke-dasharray:4 3}
svg .bar{fill:#0072B2}
svg .gate{stroke:#000;stroke-width:2}
svg .gate-label{font-size:11px;font-weight:600;fill:#000;paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}
svg .no-gate{font-size:12px;fill:#555;font-style:italic}
.charts{display:grid;grid-template-columns:repeat(3,minmax(0,1fr));gap:8px 16px}
figure{margin:0}figcaption{font-size:12px;color:#444}
.v-pass{fill:#009E73}.v-miss{fill:#D55E00}.v-failed{fill:#CC79A7}.v-censored{fill:#E69F00}.v-excluded{fill:#999999}.v-invalid{fill:#000000}
#headline{margin:8px 0 18px}
#headline .figures{display:flex;flex-wrap:wrap;gap:12px 16px;margin:0 0 12px}
#headline .figure{flex:1 1 260px;border:1px solid #ddd;border-radius:6px;padding:10px 14px;background:#fafafa}
#headline .big{font-size:26px;font-weight:700;line-height:1.2;font-variant-numeric:tabular-nums}
#headline .what{font-size:13px;color:#333}
#headline .verdict-overloaded{border-color:#D55E00;background:#fdf0e8}#headline .verdict-overloaded .big{color:#a34300}
#headline .verdict-steady{border-color:#009E73;background:#e9f7f2}#headline .verdict-steady .big{color:#006b4e}
#headline .verdict-inconclusive{border-color:#E69F00;background:#fdf6e6}
.muted{color:#666;font-weight:400}
.run{display:flex;flex-wrap:wrap;gap:12px 40px;align-items:flex-start}.run .labels-box{display:flex;flex-wrap:wrap;gap:12px 28px;align-items:flex-start;flex:1 1 360px;min-width:0}
table.labels caption{text-align:left;font-weight:600;padding:0 0 2px}
table.labels th{background:none;font-weight:400;color:#555}
table.labels td{white-space:normal;overflow-wrap:anywhere;max-width:24em}
footer{margin-top:32px;color:#666;font-size:12px;border-top:1px solid #ddd;padding-top:8px}
";

/// The document head (title, generator, content-security policy, style) and
/// the opening `<body>`.
pub(super) fn head(o: &mut String, r: &Receipt) {
    let short_sha: String = r.trace.sha256.chars().take(12).collect();
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"{} {}\">\n<title>goodput report · {}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n",
        escape(&r.generator.name),
        escape(&r.generator.version),
        escape(&short_sha)
    );
}

/// The footer (generator, trace sha256, receipt schema) and the page's end.
pub(super) fn footer(o: &mut String, r: &Receipt) {
    let _ = write!(
        o,
        "<footer>Made by {} {} from the trace bytes with sha256 <code>{}</code> ({}). \
         The JSON receipt (<code>goodput analyze --json</code>) is the record; this page is a view of it. \
         Same trace, same page, byte for byte.</footer>\n</body>\n</html>\n",
        escape(&r.generator.name),
        escape(&r.generator.version),
        escape(&r.trace.sha256),
        escape(&r.schema)
    );
}
