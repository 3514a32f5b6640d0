// The run's comparison, when `gsteer eval compare` wrote one into RUN/eval/compare: a link in
// the header, Figure 3 and links to every table (markdown and CSV) at the bottom of the page.
import { el, getJson, runUrl } from '/static/api.js';

const run = decodeURIComponent(location.pathname.split('/').filter(Boolean).pop());
const { files } = await getJson(runUrl(run, '/compare'));
if (files.length) {
  const href = (f) => runUrl(run, `/compare/${encodeURIComponent(f)}`);
  const list = document.getElementById('compare-files');
  files.forEach((f, i) => list.append(...(i ? [' · '] : []), el('a', { href: href(f) }, f)));
  const section = document.getElementById('compare');
  if (files.includes('figure3.svg'))
    section.append(el('a', { href: href('figure3.svg') }, el('img', { id: 'compare-figure', src: href('figure3.svg'), alt: 'Figure 3: E-WCov against questions asked, and the gain per question over Direct Rewrite' })));
  section.hidden = false;
  document.getElementById('compare-nav').hidden = false;
}
