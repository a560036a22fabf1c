// The learner's whole path with JavaScript off: plain forms and links.
import { expect, test } from "@playwright/test";
import { PASSWORD, register, uniqueEmail } from "./fixtures";
import { VIDEO, accountId, adminApi, createCourse, enterCode, newLearner, shareState, sloppy, snapshot, sql, typo } from "./course";

test.use({ javaScriptEnabled: false });

test("register from the link, enter a code, open the video, all without JavaScript", async ({ page, context }, testInfo) => {
  const api = await adminApi();
  const course = await createCourse(api);

  await page.goto(`/s/${course.slug}`);
  await expect(shareState(page)).toHaveAttribute("data-state", "signed-out");
  await page.getByRole("main").getByRole("link", { name: "Create account" }).click();
  const email = uniqueEmail("nojs-learner");
  await register(page, email, "Plain Forms", PASSWORD, { javaScript: false });
  await expect(page).toHaveURL(new RegExp(`/s/${course.slug}$`));
  await expect(shareState(page)).toHaveAttribute("data-state", "needs-code");

  // A typo: the server catches it (no script to do it first).
  await enterCode(page, typo(course.codes[0]));
  await expect(page.locator("#code-error")).toHaveText("This code has a typo: check it and try again.");
  await expect(shareState(page)).toHaveAttribute("data-state", "needs-code");

  await enterCode(page, sloppy(course.codes[0]));
  await expect(shareState(page)).toHaveAttribute("data-state", "pending");
  await expect(page.locator(".state-card")).toContainText("It will be bound to this account");
  await snapshot(page, testInfo, "no-js-pending");

  await page.getByRole("link", { name: "Lesson 1: Ownership" }).click();
  await expect(page.locator(".flash.success")).toContainText("now bound to this account");
  await expect(page.locator(".bound-note")).toContainText(`Bound to ${email}`);
  const src = await page.locator("video.player").getAttribute("src");
  expect(src).toBe(`/api/v1/s/${course.slug}/resources/${course.video}/content`);
  // What the player would fetch: the bytes, with Range support.
  const whole = await context.request.get(src!);
  expect(whole.status()).toBe(200);
  expect(Buffer.compare(await whole.body(), VIDEO)).toBe(0);
  const part = await context.request.get(src!, { headers: { Range: "bytes=0-99" } });
  expect(part.status()).toBe(206);
  expect((await part.body()).length).toBe(100);
  await snapshot(page, testInfo, "no-js-video");

  expect(sql(`SELECT bound_principal FROM auth_codes WHERE id = '${course.codeIds[0]}'`)).toBe(accountId(email));

  await page.goto("/courses");
  await expect(page.getByRole("link", { name: course.title })).toBeVisible();
});

test("a code already used by another account is refused without JavaScript", async ({ browser }) => {
  const api = await adminApi();
  const course = await createCourse(api);
  const owner = await browser.newContext({ javaScriptEnabled: false });
  const ownerPage = await owner.newPage();
  await newLearner(owner, "nojs-owner");
  await ownerPage.goto(`/s/${course.slug}`);
  await enterCode(ownerPage, course.codes[0]);
  await ownerPage.getByRole("link", { name: "Welcome notes" }).click();
  await expect(ownerPage.locator(".bound-note")).toBeVisible();

  const other = await browser.newContext({ javaScriptEnabled: false });
  const page = await other.newPage();
  await newLearner(other, "nojs-other");
  await page.goto(`/s/${course.slug}`);
  await enterCode(page, course.codes[0]);
  await expect(page.getByRole("alert")).toHaveText("This code is already used by another account.");
  await expect(shareState(page)).toHaveAttribute("data-state", "needs-code");
  expect(sql(`SELECT count(*) FROM auth_codes WHERE share_id = '${course.id}' AND bound_principal IS NOT NULL`)).toBe("1");
  await owner.close();
  await other.close();
});
