// A paused share, a used-up quota, a revoked code and a closed window each
// get their own message, and none of them binds anything.
import { expect, test } from "@playwright/test";
import { openHydrated } from "./fixtures";
import { adminApi, createCourse, enterCode, newLearner, shareState, snapshot, sql } from "./course";

const bound = (share: string) =>
  sql(`SELECT count(*) FROM auth_codes WHERE share_id = '${share}' AND bound_principal IS NOT NULL`);

test("paused share: explained, no code form, nothing bound", async ({ page, context }, testInfo) => {
  const api = await adminApi();
  const course = await createCourse(api, { status: "paused" });
  await newLearner(context, "paused");
  await openHydrated(page, `/s/${course.slug}`);
  await expect(shareState(page)).toHaveAttribute("data-state", "unavailable");
  await expect(page.locator(".state-banner")).toHaveText("This course is paused by its provider.");
  await expect(page.getByLabel("Access code")).toHaveCount(0);
  await snapshot(page, testInfo, "share-paused");
  // Opening a resource directly is refused with the same reason.
  await page.goto(`/s/${course.slug}/r/${course.video}`);
  await expect(page.locator(".refused")).toHaveAttribute("data-reason", "share_unavailable");
  await expect(page.getByRole("alert")).toContainText("paused");
  expect(bound(course.id)).toBe("0");
});

test("closed window: explained, nothing bound", async ({ page, context }, testInfo) => {
  const api = await adminApi();
  const day = 24 * 3600 * 1000;
  const course = await createCourse(api, {
    validFrom: new Date(Date.now() - 3 * day),
    validUntil: new Date(Date.now() - day),
  });
  await newLearner(context, "closed");
  await openHydrated(page, `/s/${course.slug}`);
  await expect(shareState(page)).toHaveAttribute("data-state", "unavailable");
  await expect(page.locator(".state-banner")).toHaveText("This course has closed.");
  await snapshot(page, testInfo, "share-closed");
  const response = await context.request.post(`/api/v1/s/${course.slug}/code`, { data: { code: course.codes[0] } });
  expect(response.status()).toBe(403);
  expect((await response.json()).code).toBe("share_unavailable");
  expect(bound(course.id)).toBe("0");
});

test("revoked code: refused with its reason, nothing bound", async ({ page, context }, testInfo) => {
  const api = await adminApi();
  const course = await createCourse(api);
  const revoked = await api.post(`/api/v1/codes/${course.codeIds[0]}/revoke`, { data: {} });
  expect(revoked.status(), await revoked.text()).toBe(200);
  await newLearner(context, "revoked");
  await openHydrated(page, `/s/${course.slug}`);
  await enterCode(page, course.codes[0]);
  await expect(page.getByRole("alert")).toHaveText("This code was revoked by the course provider.");
  await expect(shareState(page)).toHaveAttribute("data-state", "needs-code");
  await snapshot(page, testInfo, "share-revoked-code");
  expect(bound(course.id)).toBe("0");
});

test("used-up quota: the next learner is told, their code stays unused", async ({ browser }, testInfo) => {
  const api = await adminApi();
  const course = await createCourse(api, { quota: 1 });
  // The first learner takes the only access.
  const first = await browser.newContext();
  const firstPage = await first.newPage();
  await newLearner(first, "quota1");
  await openHydrated(firstPage, `/s/${course.slug}`);
  await enterCode(firstPage, course.codes[0]);
  await expect(shareState(firstPage)).toHaveAttribute("data-state", "pending");
  await firstPage.getByRole("link", { name: "Welcome notes" }).click();
  await expect(firstPage.locator(".bound-note")).toBeVisible();

  const second = await browser.newContext();
  const page = await second.newPage();
  await newLearner(second, "quota2");
  await openHydrated(page, `/s/${course.slug}`);
  await expect(shareState(page)).toHaveAttribute("data-state", "unavailable");
  await expect(page.locator(".state-banner")).toHaveText("This course has reached its access limit.");
  await snapshot(page, testInfo, "share-quota-exhausted");
  // Straight to the content with a pending code: refused, not bound.
  const entered = await second.request.post(`/api/v1/s/${course.slug}/code`, { data: { code: course.codes[1] } });
  expect(entered.status(), await entered.text()).toBe(200);
  await page.goto(`/s/${course.slug}/r/${course.video}`);
  await expect(page.locator(".refused")).toHaveAttribute("data-reason", "quota_exhausted");
  await expect(page.getByRole("alert")).toContainText("reached its access limit");
  expect(bound(course.id)).toBe("1");
  expect(sql(`SELECT bound_principal IS NULL FROM auth_codes WHERE id = '${course.codeIds[1]}'`)).toBe("t");
  await first.close();
  await second.close();
});
