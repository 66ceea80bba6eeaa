"""The built-in sections of report.html, one module each (registered in
drarena.report.section, which gives their order on the page)."""
