/// The report's stylesheet, inlined in the single file, the index and every page, so each
/// opens without any other file.
enum ReportStyle {
    /// The CSS; `thumbnailSize` sets the grid's cell size.
    static func css(thumbnailSize: Int) -> String {
        """
        :root { --thumb: \(thumbnailSize)px; --ok: #168a34; --bad: #d9480f; --muted: #5f6470; --line: #dcdfe5; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: #1d1f23; background: #f3f4f6; }
        header { padding: 16px 24px 12px; background: #fff; border-bottom: 1px solid var(--line); }
        h1 { font-size: 20px; margin: 0 0 2px; }
        .where { color: var(--muted); margin: 0 0 12px; overflow-wrap: anywhere; }
        .stats { display: flex; flex-wrap: wrap; gap: 8px; margin: 0; padding: 0; list-style: none; }
        .stats li { background: #f3f4f6; border: 1px solid var(--line); border-radius: 6px; padding: 5px 10px; }
        .stats b { display: block; font-size: 18px; }
        .stats small { color: var(--muted); font-size: 12px; white-space: nowrap; }
        .controls { display: flex; flex-wrap: wrap; gap: 8px 20px; align-items: center; margin-top: 12px; }
        .controls select { font: inherit; padding: 2px 4px; }
        .legend span { display: inline-block; width: 14px; height: 10px; margin: 0 4px 0 10px; vertical-align: middle; }
        .legend .confirmed { border: 2px solid var(--ok); }
        .legend .rejected { border: 2px dashed var(--bad); }
        main { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(100%, calc(var(--thumb) + 20px)), 1fr)); gap: 12px; padding: 16px 24px; }
        .card { display: flex; flex-direction: column; background: #fff; border: 1px solid var(--line); border-radius: 8px; overflow: hidden; }
        .card[hidden] { display: none; }
        .frame { display: flex; align-items: center; justify-content: center; min-height: calc(var(--thumb) + 20px); padding: 10px; background: #26282d; }
        .photo { position: relative; max-width: 100%; }
        .photo img { display: block; max-width: 100%; height: auto; }
        .box { position: absolute; border: 2px solid var(--ok); box-shadow: 0 0 0 1px rgba(0, 0, 0, .55); }
        .box.rejected { border: 2px dashed var(--bad); box-shadow: none; }
        .box span { position: absolute; left: -2px; top: 100%; padding: 0 3px; font-size: 11px; line-height: 15px; color: #fff; background: var(--ok); white-space: nowrap; }
        .box.rejected span { background: var(--bad); }
        .placeholder { max-width: 90%; padding: 16px; border: 2px dashed #6b6f78; border-radius: 6px; color: #e9eaee; text-align: center; overflow-wrap: anywhere; }
        .placeholder strong { display: block; font-size: 16px; margin-bottom: 4px; }
        .meta { padding: 8px 10px 10px; }
        .name { margin: 0 0 4px; font-size: 13px; overflow-wrap: anywhere; }
        .meta p { margin: 2px 0; }
        .tag { display: inline-block; padding: 0 6px; border-radius: 4px; font-size: 12px; background: #e6e8ec; }
        .tag.faces, .tag.uploaded { background: #d4f3dc; color: #0c5a21; }
        .tag.uploaded-unverified { background: #fff1c2; color: #6b4e00; }
        .tag.error, .tag.failed { background: #ffe1d4; color: #8a2a00; }
        .tag.analyzed { background: #dde9ff; color: #1f3f80; }
        .tag.unanalysable { background: #ececec; color: #444; }
        .muted { color: var(--muted); }
        .problem { color: #8a2a00; overflow-wrap: anywhere; }
        code { font-size: 12px; overflow-wrap: anywhere; }
        .empty { grid-column: 1 / -1; color: var(--muted); }
        .controls input[type=search] { font: inherit; padding: 2px 6px; width: 16em; }
        nav.pages { display: flex; flex-wrap: wrap; gap: 6px 14px; margin: 0 0 12px; }
        nav.pages .here { font-weight: 600; }
        .card.target { outline: 3px solid #f59f00; outline-offset: 2px; }
        main.index { display: block; }
        main.index section { margin: 0 0 20px; }
        main.index h2 { font-size: 16px; margin: 0 0 8px; }
        #matches { margin: 0; padding-left: 2.5em; columns: 2 28em; }
        #matches li { break-inside: avoid; margin: 0 0 3px; overflow-wrap: anywhere; }
        table.pages { border-collapse: collapse; background: #fff; border: 1px solid var(--line); }
        table.pages th, table.pages td { padding: 4px 10px; border-bottom: 1px solid var(--line); text-align: right; white-space: nowrap; }
        table.pages th:first-child, table.pages td:first-child, table.pages td.range { text-align: left; }
        table.pages td.range { white-space: normal; overflow-wrap: anywhere; max-width: 36em; }
        table.pages tr.none td { color: var(--muted); opacity: .6; }
        table.pages td.matches { font-weight: 600; }
        main.people { display: block; }
        .person { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; margin: 0 0 14px; }
        .person h2 { font-size: 16px; margin: 0; }
        .person .faces { display: flex; flex-wrap: wrap; gap: 6px; margin-top: 6px; }
        .person .faces img, .person .faces .missing { display: block; width: 96px; height: 96px; object-fit: cover; border-radius: 6px; background: #26282d; }
        .person .faces .missing { color: #e9eaee; font-size: 11px; padding: 8px; }
        .people-link { margin: 8px 0 0; }

        """
    }
}
