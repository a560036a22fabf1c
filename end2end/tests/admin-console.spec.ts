// A course creator's whole day in the console, and a learner in between.
import { readFileSync } from "node:fs";
import { expect, test } from "@playwright/test";
import { openHydrated, signIn } from "./fixtures";
import { enterCode, specTenant, newLearner, shareState, sloppy, snapshot, sql } from "./course";

test("create, upload, issue, download once, revoke, learner binds, unbind, audit", async ({ page, browser }, testInfo) => {
  test.setTimeout(90_000);
  const title = `Console Course ${Date.now().toString(36)}`;

  const owner = await specTenant();
  await openHydrated(page, "/login?next=/admin");
  await signIn(page, owner.email, owner.password);
  await page.getByRole("link", { name: owner.name }).click();
  await expect(page.getByRole("heading", { level: 1, name: owner.name })).toBeVisible();
  await snapshot(page, testInfo, "console-dashboard");

  // Create the share, make it active.
  await page.getByLabel("Title").fill(title);
  await page.getByRole("button", { name: "Create share" }).click();
  await expect(page.getByRole("heading", { level: 1, name: title })).toBeVisible();
  await page.getByLabel("Status").selectOption("active");
  await page.getByRole("button", { name: "Save" }).click();
  await expect(page.locator(".saved")).toHaveText("Saved.");
  const shareUrl = page.url();
  const slug = (await page.locator("#share-link").textContent())!.replace("/s/", "");

  // Upload a file (a plain multipart form).
  await page.locator("#upload-title").fill("Lesson 1");
  await page.locator("#upload-file").setInputFiles(testInfo.project.testDir + "/../fixtures/lesson.webm");
  await page.getByRole("button", { name: "Upload" }).click();
  await expect(page.getByRole("status").filter({ hasText: "Uploaded Lesson 1." })).toBeVisible();
  await expect(page.locator(".resource-title", { hasText: "Lesson 1" })).toBeVisible();

  // Issue 20 codes: shown once, downloaded once.
  await page.locator("#count").fill("20");
  await page.locator("#label").fill("e2e class");
  await page.getByRole("button", { name: "Issue codes" }).click();
  await expect(page.getByRole("heading", { name: `New codes for ${title}` })).toBeVisible();
  const codes = await page.locator(".plain-code").allTextContents();
  expect(codes).toHaveLength(20);
  // Printable cards: one per code, each with a QR code of the link.
  await expect(page.locator(".code-card")).toHaveCount(20);
  await expect(page.locator(".code-card").first().locator("svg")).toBeVisible();
  await expect(page.locator(".code-card").first()).toContainText(codes[0]);
  await expect(page.locator(".code-card").first()).toContainText("Sign in, then enter the code once.");
  // The cards follow the learners' language, chosen in place (a reload
  // would find the codes gone); the console stays English.
  await expect(page.locator("body")).toHaveAttribute("data-hydrated", "true");
  await page.getByLabel("Language of the cards").selectOption("zh-CN");
  await expect(page.locator(".code-card").first()).toContainText("登录后输入一次兑换码");
  await expect(page.locator(".code-card").first()).toHaveAttribute("lang", "zh-CN");
  await expect(page.locator(".code-card").last()).toContainText(codes[19]);
  await expect(page.getByRole("heading", { name: `New codes for ${title}` })).toBeVisible();
  await snapshot(page, testInfo, "console-code-cards");
  await page.getByLabel("Language of the cards").selectOption("en");
  await expect(page.locator(".code-card").first()).toContainText("Sign in, then enter the code once.");
  const resultUrl = page.url();
  const [download] = await Promise.all([
    page.waitForEvent("download"),
    page.getByRole("link", { name: "Download CSV (once)" }).click(),
  ]);
  // The BOM tells Excel the file is UTF-8; read it before trim() (which
  // strips U+FEFF) can hide it.
  const raw = readFileSync(await download.path(), "utf8");
  expect(raw.startsWith("\uFEFFcode,link,batch_label\r\n")).toBe(true);
  const csv = raw.trim().split(/\r?\n/);
  expect(csv[0]).toBe("code,link,batch_label");
  expect(csv.slice(1).map((line) => line.split(",")[0])).toEqual(codes);
  expect(csv[1]).toContain(`/s/${slug},e2e class`);
  const again = await page.request.get(new URL(await download.url()).pathname);
  expect(again.status()).toBe(410);
  await page.goto(resultUrl);
  await expect(page.getByText("These codes were already shown once")).toBeVisible();
  await expect(page.locator(".plain-code")).toHaveCount(0);

  // The code table: 20 unused codes; revoke the first.
  await page.goto(shareUrl + "/codes");
  await expect(page.locator("tr[data-code]")).toHaveCount(20);
  await snapshot(page, testInfo, "console-code-table");
  const firstHint = await page.locator("tr[data-code] code").first().textContent();
  await page.getByRole("button", { name: `Revoke code ${firstHint}` }).click();
  await expect(page.locator("tr[data-code]").first()).toHaveAttribute("data-state", "revoked");

  // A learner, in their own browser, redeems the second code.
  const learnerContext = await browser.newContext();
  const learner = await learnerContext.newPage();
  const email = await newLearner(learnerContext, "console");
  // The QR code's link carries the code in its fragment: it is filled in.
  await openHydrated(learner, `/s/${slug}#code=${codes[1]}`);
  await expect(learner.getByLabel("Access code")).toHaveValue(codes[1]);
  await learner.getByRole("button", { name: "Use this code" }).click();
  await expect(shareState(learner)).toHaveAttribute("data-state", "pending");
  await learner.getByRole("link", { name: "Lesson 1" }).click();
  await expect(learner.locator(".bound-note")).toContainText(`Bound to ${email}`);

  // The admin sees it bound, with the learner's email, and unbinds it.
  await page.goto(shareUrl + "/codes?state=bound");
  const row = page.locator("tr[data-state=bound]");
  await expect(row).toHaveCount(1);
  await expect(row).toContainText(email);
  await row.getByText("Unbind…").click();
  await row.getByLabel("Reason (the learner loses access)").fill("bought for a colleague");
  // Without the confirmation tick the browser does not send the form.
  await row.getByRole("button", { name: "Unbind" }).click();
  await expect(page.locator("tr[data-state=bound]")).toHaveCount(1);
  await row.getByLabel(`I understand that ${email} loses access to this course at once.`).check();
  await row.getByRole("button", { name: "Unbind" }).click();
  await expect(page.locator("tr[data-state=bound]")).toHaveCount(0);
  expect(sql(`SELECT count(*) FROM auth_codes c JOIN shares s ON s.id = c.share_id WHERE s.slug = '${slug}' AND c.bound_principal IS NOT NULL`)).toBe("0");

  // The learner lost access.
  await learner.reload();
  await expect(learner.locator(".refused")).toHaveAttribute("data-reason", "code_required");

  // Support's "my code doesn't work": the full code, pasted as learners
  // send it, opens the table at that code.
  await page.goto(shareUrl + "/codes");
  await page.getByLabel("Find a full code").fill("ABCD");
  await page.getByRole("button", { name: "Find", exact: true }).click();
  await expect(page.locator("#code-error")).toContainText("A code has 12 letters and digits");
  await page.getByLabel("Find a full code").fill(sloppy(codes[2]));
  await page.getByRole("button", { name: "Find", exact: true }).click();
  await expect(page).toHaveURL(/\/codes\?code=/);
  await expect(page.getByText("Showing the code you looked up.")).toBeVisible();
  await expect(page.locator("tr[data-code]")).toHaveCount(1);
  await expect(page.locator("tr[data-code] code")).toHaveText(`${codes[2].slice(0, 2)}…${codes[2].slice(-2)}`);
  await expect(page.getByText("1–1 of 1 codes")).toBeVisible();

  // The learner redeems that code; revoking a bound code asks first.
  await openHydrated(learner, `/s/${slug}`);
  await enterCode(learner, codes[2]);
  await learner.getByRole("link", { name: "Lesson 1" }).click();
  await expect(learner.locator(".bound-note")).toContainText(`Bound to ${email}`);
  await page.goto(shareUrl + "/codes?state=bound");
  const bound = page.locator("tr[data-state=bound]");
  await expect(bound).toHaveCount(1);
  await bound.locator("details.confirm-action summary").click();
  const revokeBound = bound.locator("details.confirm-action").getByRole("button", { name: /^Revoke code / });
  // Without the tick the browser does not send the form.
  await revokeBound.click();
  await expect(page.locator("tr[data-state=bound]")).toHaveCount(1);
  await bound.getByLabel(`I understand that ${email} loses access to this course at once, and the code can never be used again.`).check();
  await revokeBound.click();
  await expect(page.locator("tr[data-state=bound]")).toHaveCount(0);
  expect(sql(`SELECT count(*) FROM auth_codes c JOIN shares s ON s.id = c.share_id WHERE s.slug = '${slug}' AND c.revoked_at IS NOT NULL`)).toBe("2");
  await learner.reload();
  await expect(learner.locator(".refused")).toBeVisible();
  await learnerContext.close();

  // The audit log tells the story.
  await page.goto(shareUrl.replace(/\/s\/.*$/, "/audit"));
  for (const action of ["share.created", "share.updated", "resource.uploaded", "batch.issued", "code.revoked", "code.unbound"]) {
    await expect(page.locator(`tr[data-action="${action}"]`).first()).toBeVisible();
  }
  await expect(page.locator('tr[data-action="code.unbound"]').first()).toContainText("bought for a colleague");
  await snapshot(page, testInfo, "console-audit-log");
});
