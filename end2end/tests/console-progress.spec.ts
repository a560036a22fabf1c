// Long console operations show progress: an upload (XHR progress events,
// the network throttled so that it takes a while) and a large batch of codes
// (the server reports how many codes it has written).
import { expect, test } from "@playwright/test";
import { openHydrated, signIn } from "./fixtures";
import { adminApi, createCourse, specTenant, sql } from "./course";

test("an upload shows a progress bar, then the new resource", async ({ page }) => {
  test.setTimeout(60_000);
  const course = await createCourse(await adminApi());
  const owner = await specTenant();
  const tenant = owner.id;
  await openHydrated(page, `/login?next=/admin/t/${tenant}/s/${course.id}`);
  await signIn(page, owner.email, owner.password);
  await expect(page.getByRole("heading", { level: 1, name: course.title })).toBeVisible();
  await expect(page.locator("body")).toHaveAttribute("data-hydrated", "true");

  // About three seconds of upload at 100 kB/s.
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Network.enable");
  await cdp.send("Network.emulateNetworkConditions", {
    offline: false,
    latency: 0,
    downloadThroughput: -1,
    uploadThroughput: 100 * 1024,
  });
  await page.locator("#upload-title").fill("Big handout");
  await page.locator("#upload-file").setInputFiles({
    name: "handout.bin",
    mimeType: "application/octet-stream",
    buffer: Buffer.alloc(300 * 1024, 7),
  });
  await page.getByRole("button", { name: "Upload" }).click();
  const progress = page.getByTestId("upload-progress");
  await expect(progress).toBeVisible();
  await expect(progress).toContainText(/Uploading… \d+%/);
  await expect(page.getByRole("button", { name: "Upload" })).toBeDisabled();
  await expect(page.getByRole("status").filter({ hasText: "Uploaded Big handout." })).toBeVisible({ timeout: 30_000 });
  await cdp.send("Network.emulateNetworkConditions", {
    offline: false,
    latency: 0,
    downloadThroughput: -1,
    uploadThroughput: -1,
  });
  // The list refreshed in place, and the database has the whole file.
  await expect(page.locator(".admin-resources .resource-title", { hasText: "Big handout" })).toBeVisible();
  expect(sql(`SELECT size_bytes FROM resources WHERE share_id = '${course.id}' AND title = 'Big handout'`)).toBe(
    String(300 * 1024),
  );
});

test("issuing a large batch shows how many codes are written", async ({ page }) => {
  test.setTimeout(120_000);
  const course = await createCourse(await adminApi(), { codes: 1 });
  const owner = await specTenant();
  const tenant = owner.id;
  await openHydrated(page, `/login?next=/admin/t/${tenant}/s/${course.id}`);
  await signIn(page, owner.email, owner.password);
  await expect(page.locator("body")).toHaveAttribute("data-hydrated", "true");

  await page.getByLabel("How many").fill("50000");
  await page.getByLabel("Label", { exact: true }).fill("big class");
  await page.getByRole("button", { name: "Issue codes" }).click();
  const progress = page.getByTestId("issue-progress");
  await expect(progress).toBeVisible();
  await expect(progress).toContainText(/[\d,]+ of 50,000 codes written/, { timeout: 30_000 });
  // Then the one-time page, and exactly one batch of 50,000 in the database.
  await expect(page).toHaveURL(/\/batches\//, { timeout: 60_000 });
  expect(
    sql(`SELECT count(*) FROM auth_codes c JOIN code_batches b ON b.id = c.batch_id
         WHERE b.share_id = '${course.id}' AND b.label = 'big class'`),
  ).toBe("50000");
});
