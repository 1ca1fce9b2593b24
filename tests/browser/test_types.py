"""onnxtrain.d.ts under `tsc --strict --noEmit` of TypeScript 5.9 and 7.0: every ```js/```ts example of the docs that
uses the library, module programs importing "onnxtrain" from the packed npm package (moduleResolution "bundler",
"node16", and onnxtrain.mjs by its path), a classic script using the globals, and wrong programs that must fail; and the API reference TypeDoc makes of it."""
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import build
from browser.conftest import Page

DOCS = [build.ROOT / "README.md", build.ROOT / "web" / "lib" / "README.md", *sorted((build.ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^[ \t]*```(js|ts)\n(.*?)^[ \t]*```", re.M | re.S)
COMMON = ["--noEmit", "--strict", "--target", "es2022", "--lib", "es2022,dom", "--skipLibCheck", "false"]
BUNDLER = ["--module", "esnext", "--moduleResolution", "bundler"]

PROGRAM = """import * as ort from "%s";

const session = await ort.TrainingSession.create({ checkpointState: "checkpoint", trainModel: "training_model.onnx" });
const x = new ort.Tensor("float32", new Float32Array(8), [2, 4]);
const out: ort.ReturnType = await session.runTrainStep({ input: x }, [session.trainingOutputNames[0]]);
const summary: ort.TrainSummary = await session.train({ input: x, labels: { type: "int64", data: new BigInt64Array(2),
  dims: [2] } }, { epochs: 2, schedule: "linear", validation: 0.1, signal: new AbortController().signal,
  checkpoints: true, onStart: (s) => console.log(s.validationRows, s.epochs ?? "until it stops"),
  onProgress: (r: ort.TrainProgress) => console.log(r.loss, r.learningRate, r.best?.bestEpoch, r.progress / (r.epochs ?? 1)) });
console.log(out, summary.best.restored, summary.history[0]?.validationLoss);
const blobs = [new Blob([await session.exportModelForInferencing(["output"])]), new Blob([await session.saveCheckpoint()]),
  new Blob([await session.artifactsZip()]), new Blob([summary.checkpoint ?? new Uint8Array(0)])];
const made = await ort.generateArtifacts(new Uint8Array(4), { requiresGrad: ["w"], loss: null, optimizer: "SGD" });
await ort.TrainingSession.create(made);
const scheduler = new ort.LinearLRScheduler(session, 2, 10, 0.1);
const rate: number = await scheduler.step();
const info = await ort.describeModel(made.trainModel);
const opsWithout: string[] = info.opsWithoutGradient;

const table = await ort.TabularTask.create("data.csv");
const described: ort.TableDescription = await table.describe();
const setup = await table.setup({ label: described.suggestedLabel, task: described.task, hidden: [8] });
const rows: number = setup.trainRows + setup.validationRows + setup.droppedRows + setup.missingCells;
const fit = await table.train({ epochs: 3, onProgress: (r) => console.log(r.metrics?.loss) });
const metrics = fit.metrics ?? await table.evaluate();
const score: number = "accuracy" in metrics ? metrics.accuracy : metrics.mae;
const page = await table.predictCsv("more.csv", { limit: 10 });
const accuracy: number | null = page.accuracy;
const images = await ort.ImageTask.create({ pixels: new Uint8Array(4), count: 1, size: 1, labels: [0], classes: ["a"] });
const perClass: number[] = (await images.info()).trainPerClass;
const confusion: number[][] = (await images.evaluate()).confusion;
const digits = await ort.HandwritingTask.create("digits.onnx");
const counts: Record<string, number> = await digits.counts();
const tuned = await digits.fineTune({ epochs: 2 });
const personal = await ort.PersonalizeTask.create("backbone.onnx");
const evaluated = await personal.evaluate();
const className: string = (await personal.predict(new Uint8Array(4), { width: 1, height: 1 })).className;
const text = await ort.TextTask.create({ onLoad: (p: ort.LoadProgress) => console.log(p.loaded) });
const added = await text.addTexts(["one", "two"], await text.addClass("a"));
const rows2: number = (await text.addCsv("texts.csv", { text: "text", label: "label" })).added;
await text.setup({ mode: "lora", rank: 4 });
const guess: ort.TextPrediction = await text.predict("three");
const guesses: ort.TextPrediction[] = await text.predict(["four"]);
new Blob([await table.exportModel(), await images.checkpoint(), await digits.snapshot(), await personal.snapshot(),
  await text.exportModel(), await text.exportZip(), await (await ort.TextTask.fromSnapshot(await text.snapshot())).exportOnnx()]);
console.log(blobs, rate, opsWithout, rows, score, accuracy, perClass, confusion, counts, tuned.examples,
  evaluated.on, className, added.truncated, rows2, guess.truncated, guesses.length, (await text.evaluate()).on);
"""
CLASSIC = """/// <reference path="./node_modules/onnxtrain/onnxtrain-global.d.ts" />
const t = new onnxtrain.Tensor("float32", [1, 2], [2]);
ort.TrainingSession.create({ checkpointState: "c", trainModel: "t" }).then((s) => s.train({ x: t }))
  .then((summary: onnxtrain.TrainSummary) => console.log(summary.loss));
onnxtrain.TabularTask.create("data.csv").then(async (task) => new Blob([await task.exportModel()]));
"""
BAD = """import * as ort from "onnxtrain";
const session = await ort.TrainingSession.create({ checkpointState: "c", trainModel: "t" });
await session.train({}, { schedule: "cosine" });
await ort.generateArtifacts("m.onnx", { loss: "Hinge" });
await session.train({}, { onProgress: (r) => console.log(r.progress / r.epochs) });
const setup = await (await ort.TabularTask.create("d.csv")).setup({ label: "y", task: "regression", hidden: [] });
console.log(setup.train_rows);
await ort.start({ tasks: ["handwritting"] });
"""
BAD_ERRORS = [r"bad\.ts\(3,\d+\): error TS2322: Type '\"cosine\"' is not assignable",
              r"bad\.ts\(4,\d+\): error TS2322: Type '\"Hinge\"' is not assignable",
              r"bad\.ts\(5,\d+\): error TS(18047|2531): 'r\.epochs' is possibly 'null'",
              r"bad\.ts\(7,\d+\): error TS2551: Property 'train_rows' does not exist on type 'TabularSetup'",
              r"bad\.ts\(8,\d+\): error TS(2322|2820): Type '\"handwritting\"' is not assignable"]
BAD_CLASSIC = """/// <reference path="./node_modules/onnxtrain/onnxtrain-global.d.ts" />
ort.TrainingSession.make({ checkpointState: "c", trainModel: "t" });
"""


def doc_blocks() -> list[tuple[str, int, str]]:
    """(doc file, line, code) of each ```js or ```ts block of the docs that uses the library."""
    found = []
    for doc in DOCS:
        text = doc.read_text()
        for m in BLOCK.finditer(text):
            code = m.group(2)
            if re.search(r"onnxtrain|\bort\.|TrainingSession", code):
                found.append((str(doc.relative_to(build.ROOT)), text.count("\n", 0, m.start()) + 1, code))
    return found


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A folder with the packed npm package installed (node_modules/onnxtrain), also reachable as ./onnxtrain/ (the
    docs' examples import ./onnxtrain/onnxtrain.mjs, the folder copied next to the page)."""
    root = tmp_path_factory.mktemp("types")
    (root / "package.json").write_text('{"name": "app", "version": "1.0.0", "private": true, "type": "module"}')
    tgz = build.ROOT / "dist" / f"onnxtrain-{build.project_version()}.tgz"
    subprocess.run(["npm", "install", "--offline", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error",
                    str(tgz)], cwd=root, check=True, capture_output=True)
    (root / "onnxtrain").symlink_to(root / "node_modules" / "onnxtrain")
    return root


def tsc(version: str) -> list[str]:
    package = build.node_tools() / {"5.9.3": "typescript", "7.0.2": "typescript7"}[version]
    assert json.loads((package / "package.json").read_text())["version"] == version
    return ["node", str(package / "bin" / "tsc")]


def check(version: str, root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*tsc(version), *COMMON, *args], cwd=root, capture_output=True, text=True)


def test_the_docs_find_examples_to_check():
    places = {(doc, line) for doc, line, _ in doc_blocks()}
    assert len(places) >= 7 and {doc for doc, _ in places} >= {"README.md", "web/lib/README.md"}, places


@pytest.mark.parametrize("version", ["5.9.3", "7.0.2"])
def test_the_docs_examples_compile_under_strict_typescript(project, version):
    """Each example is a program of its own: a module (it imports the library) or a classic script (the globals)."""
    modules, scripts = [], []
    for doc, line, code in doc_blocks():
        path = project / f"{re.sub(r'[^A-Za-z0-9]+', '_', doc)}_{line}.ts"
        path.write_text(code)
        (modules if re.search(r"^\s*(import|export)\b", code, re.M) else scripts).append(path)
    assert modules and scripts
    for files in [modules, *([s] for s in scripts)]:
        result = check(version, project, *BUNDLER, *(str(f.relative_to(project)) for f in files))
        assert result.returncode == 0, (version, result.stdout, result.stderr)


@pytest.mark.parametrize("version", ["5.9.3", "7.0.2"])
def test_programs_using_the_npm_package_compile_under_strict_typescript(project, version):
    """The package import under "bundler" and "node16", onnxtrain.mjs by its path (onnxtrain.d.mts) under
    "nodenext", and the classic script's globals (onnxtrain-global.d.ts)."""
    (project / "package.ts").write_text(PROGRAM % "onnxtrain")
    (project / "path.ts").write_text(PROGRAM % "./node_modules/onnxtrain/onnxtrain.mjs")
    (project / "classic.ts").write_text(CLASSIC)
    for args in (["package.ts", *BUNDLER], ["package.ts", "--module", "node16", "--moduleResolution", "node16"],
                 ["path.ts", "--module", "nodenext", "--moduleResolution", "nodenext"], ["classic.ts", *BUNDLER]):
        result = check(version, project, *args)
        assert result.returncode == 0, (version, args, result.stdout, result.stderr)


@pytest.mark.parametrize("version", ["5.9.3", "7.0.2"])
def test_the_bundler_sample_apps_check_as_javascript(project, version):
    """The sample apps of test_bundlers.py (JavaScript, with JSDoc where a type is not inferred) under checkJs."""
    apps = project / "apps"
    shutil.copytree(Path(__file__).parent / "bundler_apps", apps, dirs_exist_ok=True)
    mains = [str(p.relative_to(project)) for p in sorted(apps.glob("*/main.js"))]
    assert len(mains) == 3
    result = check(version, project, *BUNDLER, "--allowJs", "--checkJs", "apps/shared/app.js", *mains)
    assert result.returncode == 0, (version, result.stdout, result.stderr)


@pytest.mark.parametrize("version", ["5.9.3", "7.0.2"])
def test_wrong_programs_fail_to_compile(project, version):
    (project / "bad.ts").write_text(BAD)
    (project / "bad_classic.ts").write_text(BAD_CLASSIC)
    bad = check(version, project, "bad.ts", *BUNDLER)
    assert bad.returncode != 0
    for error in BAD_ERRORS:
        assert re.search(error, bad.stdout), (version, error, bad.stdout)
    classic = check(version, project, "bad_classic.ts", *BUNDLER)
    assert classic.returncode != 0 and re.search(r"bad_classic\.ts\(2,\d+\): error TS2339: Property 'make' does "
                                                 r"not exist on type 'typeof TrainingSession'", classic.stdout), \
        (version, classic.stdout)


MAIN_CLASSES = ["AudioTask", "Federation", "HandwritingTask", "ImageTask", "LinearLRScheduler", "Microphone",
                "PersonalizeTask", "TabularTask", "Tensor", "TextTask", "TrainingSession"]


def test_the_api_reference_is_built_and_loads_nothing_from_another_origin(browser, site_url):
    """site/onnxtrain-api/: a page per main class, linked from the library's README; every script and stylesheet
    of every page from the site, and the index, opened, requests nothing off the origin."""
    api = build.SITE / build.API_REFERENCE
    # Task: the tasks' base class, not exported, documented for the methods they share
    classes = {p.stem for p in (api / "classes").glob("*.html")}
    errors = {"OnnxtrainError", "DataError", "CheckpointError", "ModelDecodeError", "NonFiniteStepError"}
    assert classes >= {*MAIN_CLASSES, "Task", *errors} and all(c in MAIN_CLASSES or c == "Task" or c.endswith("Error")
                                                               for c in classes), classes
    assert "../onnxtrain-api/index.html" in (build.ROOT / "web" / "lib" / "README.md").read_text()
    tags = re.compile(r"<(?:script|link)\b[^>]*?\b(?:src|href)=\"([^\"]*)\"")
    pages = sorted(api.rglob("*.html"))
    assert len(pages) > 20
    for page in pages:
        urls = tags.findall(page.read_text())
        assert urls and not [u for u in urls if re.match(r"[a-z]+:|//", u)], (page, urls)
    tabular = (api / "classes" / "TabularTask.html").read_text()
    assert "suggestedLabel" in (api / "interfaces" / "TableDescription.html").read_text()
    assert all(name in tabular for name in ("describe", "setup", "predictCsv", "exportModel"))
    context = browser.new_context()
    page = Page(context, context.new_page(), site_url)
    page.page.goto(site_url + build.API_REFERENCE + "/classes/TrainingSession.html")
    page.page.wait_for_load_state("networkidle")
    assert "runTrainStep" in page.page.text_content("body")
    nav = page.page.text_content("body")
    assert all(name in nav for name in MAIN_CLASSES), nav
    context.close()
    assert any(u.endswith("/assets/main.js") for u in page.requests) and page.off_origin() == []
