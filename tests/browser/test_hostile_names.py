"""Hostile names through every flow of the page: CSV headers and cells, handwriting classes, image folders and
files, ONNX input, output and parameter names and a doc string.  Each must show as text: no element injected,
no request off the origin (or to the URLs the markup names), no navigation."""
import csv
import io
import json

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from browser.test_images_flow import DROP, png
from web.test_images import synthetic

IMG = '<img src="/hostile-img" onerror="window.hostile=1">'
META = '<meta http-equiv="refresh" content="1;url=http://example.invalid/">'
SVG = '"><svg onload="window.hostile=1">'
IFRAME = '</table><iframe src="/hostile-frame"></iframe>'
OPTION = "</option></select><img src=/hostile-option>"
# A folder or file name cannot hold "/": the markup spells it as an entity, which an HTML parser decodes.
META_NOSLASH = '<meta http-equiv="refresh" content="1;url=http:&#47;&#47;example.invalid&#47;">'
IMG_NOSLASH = '<img src="hostile-img" onerror="window.hostile=1">'
# Class names of the handwriting flow have at most 40 characters; this refresh reloads the page itself.
SHORT_OPTION = "</option><img src=/hostile-o>"
SHORT_META = "<meta http-equiv=refresh content=1>"

# Tags that hostile markup could bring in (the page itself makes none of them after it has loaded).
WATCH = """() => {
  const tags = "img,meta,iframe,svg,script,object,embed,base,form,link,style,frame,video,audio,source";
  window.pageMarker = "still here";
  window.injected = [];
  window.startCount = document.querySelectorAll(tags).length;
  const check = (node) => {
    if (node.nodeType !== 1) return;
    for (const el of [node, ...node.querySelectorAll("*")]) {
      const events = [...el.attributes].filter((a) => a.name.startsWith("on")).map((a) => a.name);
      if (el.matches(tags) || events.length) window.injected.push(el.outerHTML.slice(0, 200));
    }
  };
  new MutationObserver((records) => records.forEach((r) => r.addedNodes.forEach(check)))
    .observe(document.documentElement, { childList: true, subtree: true });
}"""

VERDICT = """() => ({ marker: window.pageMarker, injected: window.injected, hostile: window.hostile === 1,
  added: document.querySelectorAll("img,meta,iframe,svg,script,object,embed,base,form,link,style,frame,video,audio,source").length
    - window.startCount })"""


def watched(site):
    page = site.page
    page.evaluate(WATCH)
    return page.url


def assert_not_injected(site):
    """Checked right after a step, so that a failure shows what the step injected."""
    verdict = site.page.evaluate(VERDICT)
    assert (verdict["injected"], verdict["added"], verdict["hostile"]) == ([], 0, False), verdict


def assert_nothing_happened(site, url):
    page = site.page
    page.wait_for_timeout(1500)  # a meta refresh above fires after 1 s
    assert page.url == url
    verdict = page.evaluate(VERDICT)
    assert verdict == {"marker": "still here", "injected": [], "hostile": False, "added": 0}, verdict
    assert [u for u in site.requests if "hostile" in u or "example.invalid" in u] == []
    assert site.off_origin() == []


def csv_bytes(header, rows) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue().encode()


def hostile_csv(n=60, seed=0):
    """Numeric and text columns named with markup, markup as category values and as the classes to predict."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 2))
    header = [IMG, META, SVG, IFRAME]
    rows = [[f"{a:.3f}", f"{b:.3f}", OPTION if a > 0 else META, IMG if a + b > 0 else SVG] for a, b in x]
    return header, csv_bytes(header, rows)


def wait_done(page, prefix):
    page.wait_for_function(f"() => /^Done/.test(document.getElementById('{prefix}-metrics').textContent) "
                           f"|| !document.getElementById('{prefix}-error').hidden", timeout=180_000)
    assert page.is_hidden(f"#{prefix}-error"), page.text_content(f"#{prefix}-error")


def test_csv_headers_values_classes_and_file_names_stay_text(own_page):
    page = own_page.page
    url = watched(own_page)
    header, data = hostile_csv()
    page.set_input_files("#csv-file", {"name": IMG_NOSLASH + ".csv", "mimeType": "text/csv", "buffer": data})
    page.wait_for_selector("#csv-setup:not([hidden])")
    assert_not_injected(own_page)
    assert page.eval_on_selector_all("#csv-label option", "(os) => os.map((o) => o.textContent)") == header
    assert page.eval_on_selector_all("#csv-preview th", "(hs) => hs.map((h) => h.textContent)") == header
    assert OPTION in page.text_content("#csv-preview")
    assert page.text_content("#csv-metrics").startswith(f"Loaded {IMG_NOSLASH}.csv")
    page.select_option("#csv-label", IFRAME)
    page.select_option("#csv-task", "classification")
    page.fill("#csv-epochs", "2")
    page.click("#csv-train")
    wait_done(page, "csv")
    assert_not_injected(own_page)
    assert sorted(page.eval_on_selector_all("#csv-confusion tr:first-child th", "(hs) => hs.map((h) => h.textContent)")) \
        == sorted(["", IMG, SVG])
    page.wait_for_function("() => document.getElementById('csv-signature').textContent.startsWith('The model:')")
    signature = page.text_content("#csv-signature")  # the doc string names columns and classes as JSON strings
    assert all(json.dumps(name) in signature for name in [IMG, META, SVG, IFRAME]), signature
    page.set_input_files("#csv-try-file", {"name": META_NOSLASH + ".csv", "mimeType": "text/csv", "buffer": data})
    page.wait_for_function("() => document.querySelector('#csv-try-result table') "
                           "|| !document.getElementById('csv-error').hidden")
    assert page.is_hidden("#csv-error"), page.text_content("#csv-error")
    assert IFRAME in page.text_content("#csv-try-result") and OPTION in page.text_content("#csv-try-result")
    page.wait_for_selector("#runs:not([hidden])")
    assert IFRAME in page.text_content("#runs-list")
    assert_nothing_happened(own_page, url)


def test_a_hostile_class_name_in_the_handwriting_flow_stays_text(own_page):
    page = own_page.page
    url = watched(own_page)
    page.wait_for_function("() => !document.getElementById('digit-add').disabled", timeout=60_000)
    for name in (SHORT_OPTION, SHORT_META):
        page.fill("#digit-new", name)
        page.click("#digit-new-add")
        page.wait_for_timeout(200)
        assert_not_injected(own_page)
        page.wait_for_function("(n) => document.getElementById('digit-class').selectedOptions[0].textContent === n", arg=name)
        page.click("#digit-add")
        page.wait_for_function("(n) => document.getElementById('digit-counts').textContent.includes(n + ': 1')", arg=name)
    assert page.eval_on_selector_all("#digit-class option", "(os) => os.map((o) => o.textContent)")[-2:] \
        == [SHORT_OPTION, SHORT_META]
    page.click("#digit-train")
    page.wait_for_function("() => document.getElementById('digit-metrics').textContent.startsWith('Fine-tuned') "
                           "|| !document.getElementById('digit-error').hidden", timeout=120_000)
    assert page.is_hidden("#digit-error"), page.text_content("#digit-error")
    page.wait_for_function("() => document.getElementById('digit-signature').textContent.startsWith('The model:')")
    signature = page.text_content("#digit-signature")
    assert json.dumps(SHORT_OPTION) in signature and json.dumps(SHORT_META) in signature, signature
    page.wait_for_selector("#runs:not([hidden])")
    assert SHORT_OPTION in page.text_content("#runs-list")
    assert_nothing_happened(own_page, url)


def test_hostile_image_folder_and_file_names_stay_text(own_page):
    page = own_page.page
    url = watched(own_page)
    pixels, labels = synthetic(n_per_class=4, size=16)
    classes = [IMG_NOSLASH, META_NOSLASH, SVG]
    folder = {c: {} for c in classes}
    for i, (img, label) in enumerate(zip(pixels, labels)):
        folder[classes[label]][f"{IFRAME.replace('/', '')}{i}.png"] = list(png(img))
    folder[SVG][OPTION.replace("/", "") + ".txt"] = list(b"not an image")
    page.select_option("#img-model", "scratch")
    page.select_option("#img-size", "16")
    page.evaluate(DROP, {IMG_NOSLASH: folder})
    page.wait_for_function("() => !document.getElementById('img-setup').hidden "
                           "|| !document.getElementById('img-error').hidden")
    assert page.is_hidden("#img-error"), page.text_content("#img-error")
    info = page.text_content("#img-info")
    assert all(c in info for c in classes) and OPTION.replace("/", "") in info
    page.fill("#img-epochs", "1")
    page.click("#img-train")
    wait_done(page, "img")
    assert_not_injected(own_page)
    assert sorted(page.eval_on_selector_all("#img-confusion tr:first-child th", "(hs) => hs.map((h) => h.textContent)")) \
        == sorted([""] + classes)
    page.wait_for_function("() => document.getElementById('img-signature').textContent.startsWith('The model:')")
    signature = page.text_content("#img-signature")
    assert all(json.dumps(c) in signature for c in classes), signature
    page.set_input_files("#img-try", {"name": IMG_NOSLASH + ".png", "mimeType": "image/png", "buffer": png(pixels[0])})
    page.wait_for_function("() => document.getElementById('img-prediction').textContent.startsWith('Looks like')")
    page.wait_for_selector("#runs:not([hidden])")
    assert IMG_NOSLASH in page.text_content("#runs-list")
    assert_nothing_happened(own_page, url)


def hostile_model() -> onnx.ModelProto:
    """input -> MatMul(W) + B -> output, every name markup, and markup in the doc string."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3)).astype(np.float32) * 0.1, SVG)
    b = numpy_helper.from_array(np.zeros(3, np.float32), OPTION)
    graph = helper.make_graph(
        [helper.make_node("MatMul", [IMG, SVG], ["hidden"]), helper.make_node("Add", ["hidden", OPTION], [META])],
        "hostile", [helper.make_tensor_value_info(IMG, TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info(META, TensorProto.FLOAT, ["batch", 3])], [w, b], doc_string=IFRAME)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], doc_string=IFRAME)
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def test_hostile_onnx_names_and_doc_string_stay_text(own_page):
    page = own_page.page
    url = watched(own_page)
    page.set_input_files("#own-files", {"name": IMG_NOSLASH + ".onnx", "mimeType": "application/octet-stream",
                                        "buffer": hostile_model().SerializeToString()})
    page.wait_for_selector("#own-generate:not([hidden])")
    assert_not_injected(own_page)
    assert page.eval_on_selector_all("input[name=own-param]", "(cs) => cs.map((c) => c.value)") == [SVG, OPTION]
    params = page.text_content("#own-params")
    assert SVG in params and OPTION in params
    page.wait_for_function("(d) => document.getElementById('own-signature').textContent.includes(d)", arg=IFRAME)
    signature = page.text_content("#own-signature")  # names that are not plain identifiers come as JSON strings
    assert json.dumps(IMG) in signature and json.dumps(META) in signature, signature
    page.uncheck(f"input[name=own-param] >> nth=1")
    page.click("#own-prepare")
    page.wait_for_selector("#own-data:not([hidden])")
    assert IMG in page.text_content("#own-inputs")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((40, 4))
    rows = [[f"{v:.3f}" for v in r] + [str(int(np.argmax(r[:3])))] for r in x]
    data = csv_bytes([IMG, META, SVG, IFRAME, "labels"], rows)
    page.set_input_files("#own-npz", {"name": META_NOSLASH + ".csv", "mimeType": "text/csv", "buffer": data})
    page.wait_for_function("() => !document.getElementById('own-train').disabled "
                           "|| !document.getElementById('own-error').hidden")
    assert page.is_hidden("#own-error"), page.text_content("#own-error")
    page.fill("#own-epochs", "1")
    page.click("#own-train")
    wait_done(page, "own")
    with page.expect_download() as download:  # the output's name holds spaces: exported as it is
        page.click("#own-download")
    assert [o.name for o in onnx.load(download.value.path()).graph.output] == [META]
    page.wait_for_selector("#runs:not([hidden])")
    assert IMG_NOSLASH in page.text_content("#runs-list")
    assert_nothing_happened(own_page, url)
